#!/usr/bin/env bash
# Checks docs/openapi.json against a running room-core with schemathesis
# (pinned): every check, a fixed seed, a bounded number of examples per
# operation, all four phases (examples, coverage, fuzzing, stateful). Any
# failure fails the run. About 70 s on a 2-core machine with a built binary.
# Needs root (the service runs in a mount namespace of its own) and python3
# with venv and pip; installs schemathesis itself. Extra arguments go to
# `st run` (e.g. `--phases fuzzing`).
#
# The fuzzer starts sessions in folders it makes up ("/0", "/\u00e9/x"), and
# room-core creates a session's folder as its harness starts. So the
# service runs chrooted into an overlay of / whose writes land in a tmpfs
# that goes with the namespace: nothing it creates outlives the run. Its
# state dir is bound in from outside, so the listen file can be read here.
# The harnesses are the fakes in fixtures/.
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION=4.32.5
SEED=21
EXAMPLES=${SCHEMATHESIS_EXAMPLES:-200}

[ "$(id -u)" = 0 ] || { echo "$0 needs root (unshare, mount, chroot)" >&2; exit 1; }
venv=${SCHEMATHESIS_VENV:-$HOME/.cache/room-core/schemathesis-$VERSION}
if ! "$venv/bin/st" --version 2>/dev/null | grep -qF "$VERSION"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION"
fi
cargo build --locked --quiet --bin room-core
binary=$PWD/target/debug/room-core

work=$(mktemp -d /tmp/room-core-schemathesis.XXXXXX)
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p "$work/state" "$work/sandbox"
# Harnesses run as the agent account where there is one (.ci/run makes it),
# so `approvals: "app"`, which needs another account, is served as the spec
# says. Its socket is in a folder of its own that account may enter ($work,
# holding the token, stays 0700).
sockets=$(mktemp -d /tmp/room-core-schemathesis-socket.XXXXXX)
chmod 755 "$sockets"
agent=""
if uid=$(id -u room-agent 2>/dev/null); then
  agent="\"agent_uid\": $uid, \"agent_socket\": \"$sockets/agent.sock\","
fi
cat > "$work/config.json" <<JSON
{
  $agent
  "listen": "127.0.0.1:0",
  "token": "$token",
  "state_dir": "$work/state",
  "claude_program": "$PWD/fixtures/fake-claude",
  "codex_program": "$PWD/fixtures/fake-codex",
  "kill_grace_ms": 500
}
JSON

# The service, in its own mount namespace: / as a copy-on-write overlay
# (writes go to a tmpfs), /proc, /dev and /sys as they are, the state dir
# bound through. Each step execs the next: $! is room-core itself.
unshare --mount --propagation private sh -c '
  set -e
  box=$1; state=$2; shift 2
  mount -t tmpfs -o size=512m room-core-fuzz "$box"
  mkdir "$box/upper" "$box/work" "$box/root"
  mount -t overlay overlay -o "lowerdir=/,upperdir=$box/upper,workdir=$box/work" "$box/root"
  for m in /proc /dev /sys; do mount --rbind "$m" "$box/root$m"; done
  mount --bind "$state" "$box/root$state"
  exec chroot "$box/root" "$@"
' sandbox "$work/sandbox" "$work/state" "$binary" --config "$work/config.json" \
  >"$work/service.log" 2>&1 </dev/null &
service=$!
finish() {
  kill -TERM "$service" 2>/dev/null && wait "$service" || true
  rm -rf "$work" "$sockets"
}
trap finish EXIT

for _ in $(seq 200); do
  [ -s "$work/state/listen" ] && break
  kill -0 "$service" 2>/dev/null || { cat "$work/service.log" >&2; exit 1; }
  sleep 0.1
done
addr=$(cat "$work/state/listen")

# hooks.py closes a session before its stream is read (a live stream never
# ends); it reaches the service with these.
export ROOM_CORE_URL="http://$addr" ROOM_CORE_TOKEN="$token"
export SCHEMATHESIS_HOOKS=$PWD/tests/schemathesis/hooks.py
# One worker: hypothesis describes its strategies by parsing source with
# `ast`, which on CPython 3.11 fails now and then when two threads do it at
# once ("AST constructor recursion depth mismatch"), an error of the tool's,
# not of the API. The token goes in a header, so every check (ignored_auth
# included) runs.
status=0
"$venv/bin/st" --no-color --config-file tests/schemathesis/schemathesis.toml run docs/openapi.json \
  --url "http://$addr" \
  --header "Authorization: Bearer $token" \
  --checks all \
  --seed "$SEED" \
  --max-examples "$EXAMPLES" \
  --workers 1 \
  --request-timeout 30 \
  --generation-database none \
  "$@" || status=$?
if [ "$status" != 0 ]; then
  echo "--- the service's log (tail) ---" >&2
  tail -n 50 "$work/service.log" >&2
fi
exit "$status"
