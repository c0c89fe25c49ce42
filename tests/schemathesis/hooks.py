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
