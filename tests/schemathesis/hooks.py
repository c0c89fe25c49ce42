"""Schemathesis hooks for tests/schemathesis/run.sh.

An event stream lasts until its session closes, with a keep-alive comment
every 15 s, so a stream of a live session would hold the fuzzer's request
open for as long as the run lasts. Before each request to the stream, the
session it names is closed (a 404 for an ID no session has is fine): the
stream then replays every event, sends `end` and ends, and the whole body is
checked against the spec's event schema.
"""

import os
from urllib.parse import quote

import requests
import schemathesis

STREAM = "/v1/sessions/{id}/stream"

# schemathesis 4.32.5 looks for links in every 2xx JSON body by passing each
# string to `urlsplit`, which raises on one that starts `//[` (a session's
# folder may: `//[x/code` is an absolute path); the tool then stops with an
# internal error instead of a finding. Such a string is no link.
from schemathesis.engine import observations as _observations

_same_origin_path = _observations._same_origin_path


def _no_link_on_error(value, origin):
    try:
        return _same_origin_path(value, origin)
    except ValueError:
        return None


_observations._same_origin_path = _no_link_on_error


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.path != STREAM:
        return
    session = (case.path_parameters or {}).get("id")
    if not isinstance(session, str) or not session:
        return
    url = "%s/v1/sessions/%s/close" % (os.environ["ROOM_CORE_URL"], quote(session, safe=""))
    token = os.environ["ROOM_CORE_TOKEN"]
    requests.post(url, headers={"Authorization": "Bearer " + token}, timeout=30)
