"""The Claude Agent SDK's side of the bench's follow-up figure (sdk.rs runs it).

One ClaudeSDKClient on the given claude binary (`--cli`), with the
environment this script was started with (the bench's loopback fake model),
in `--cwd`: a first prompt, waited on to its result, then `--follow-ups`
follow-ups, each timed from `client.query()` to the first AssistantMessage,
the same metric the bench reads on room-core's stream. Then `--cold` times
a fresh client that resumes the session, from `connect()` to the first
AssistantMessage of its prompt: what a follow-up costs with no process
warm (room-core's `linger_ms: 0`). Prints one JSON line: the SDK's version
and the samples in ms.
"""

import argparse
import asyncio
import json
import sys
import time

import claude_agent_sdk
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
)


async def first_assistant(client, began):
    """Reads one response to its ResultMessage; ms from `began` to its first
    AssistantMessage, and the session it names."""
    took, session = None, None
    async for message in client.receive_response():
        if took is None and isinstance(message, AssistantMessage):
            took = (time.perf_counter() - began) * 1000.0
        if isinstance(message, ResultMessage):
            session = message.session_id
    if took is None:
        raise SystemExit("a response without an assistant message")
    return took, session


async def driven(options):
    """The warm follow-ups one per line on stdin, each answered on stdout
    with its time once its response has ended."""
    loop = asyncio.get_running_loop()
    async with ClaudeSDKClient(options()) as client:
        began = time.perf_counter()
        await client.query("first")
        first, _ = await first_assistant(client, began)
        print(json.dumps({"sdk": claude_agent_sdk.__version__, "first": first}), flush=True)
        while True:
            # stdin is read off the event loop: the SDK reads claude's
            # output on it meanwhile.
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            began = time.perf_counter()
            await client.query(line.strip())
            took, _ = await first_assistant(client, began)
            print(json.dumps({"ms": took}), flush=True)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--permission-mode", default="default")
    parser.add_argument("--follow-ups", type=int, default=10)
    parser.add_argument("--cold", type=int, default=10)
    parser.add_argument("--pause-ms", type=int, default=500)
    parser.add_argument("--driven", action="store_true")
    args = parser.parse_args()

    def options(resume=None):
        return ClaudeAgentOptions(
            cli_path=args.cli,
            cwd=args.cwd,
            permission_mode=args.permission_mode,
            resume=resume,
            # Claude Code's own system prompt, as room-core's turns run:
            # left unset, the SDK passes `--system-prompt ""`, a lighter
            # run than any session of the service's.
            system_prompt={"type": "preset", "preset": "claude_code"},
        )

    if args.driven:
        await driven(options)
        return

    warm = []
    first = None
    async with ClaudeSDKClient(options()) as client:
        began = time.perf_counter()
        await client.query("first")
        first, session = await first_assistant(client, began)
        for n in range(args.follow_ups):
            # The same pause the bench leaves before each room-core follow-up:
            # claude is done with the turn before.
            await asyncio.sleep(args.pause_ms / 1000.0)
            began = time.perf_counter()
            await client.query(f"follow-up {n}")
            took, _ = await first_assistant(client, began)
            warm.append(took)

    cold = []
    for n in range(args.cold):
        await asyncio.sleep(args.pause_ms / 1000.0)
        began = time.perf_counter()
        async with ClaudeSDKClient(options(resume=session)) as client:
            await client.query(f"cold follow-up {n}")
            took, _ = await first_assistant(client, began)
            cold.append(took)

    print(
        json.dumps(
            {
                "sdk": claude_agent_sdk.__version__,
                "first": first,
                "warm": warm,
                "cold": cold,
            }
        )
    )


asyncio.run(main())
