"""A 10,000-line transcript read whole through every face of a real irisd, each of which
asks for it in pages (irisd holds one at a time): ``iris cache read`` (``--raw``, ``--json``
and the conversation), the HTTP API (the lines, and the steps the dashboard reads) and
``iris mcp``'s ``team_cache_read``. The lines are written into the database the way irisd
writes them (claude would take an hour to print that many through the scripted model)."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from e2e.test_mcp_shim import call, shim
from harness import Http, Iris
from irisd.store import tells
from irisd.store.db import open_database
from protocol.messages import TellInfo

pytestmark = pytest.mark.claude

LINES = 10_000
RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "all read", "duration_ms": 5}


def assistant(n: int) -> bytes:
    return json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": f"line {n}"}]}}).encode()


def store_history(iris: Iris) -> str:
    """A finished tell of LINES assistant lines and a result line; its id."""
    tell_id = str(uuid.uuid4())
    now = time.time()
    db = open_database(iris.home / "data" / "iris.db")
    try:
        tells.insert(db, TellInfo(id=tell_id, from_team="alpha", to_team="beta", message="read it all",
                                  status="completed", text="all read", created_at=now, finished_at=now))
        lines = [(now + n / 1000, "assistant", assistant(n)) for n in range(LINES)]
        tells.append_messages(db, tell_id, [*lines, (now + LINES, "result", json.dumps(RESULT).encode())])
    finally:
        db.close()
    return tell_id


async def test_every_face_reads_a_ten_thousand_line_transcript_whole(iris: Iris) -> None:
    alpha = iris.add_team("alpha")
    iris.add_team("beta")
    iris.start()
    tell_id = store_history(iris)
    texts = [f"line {n}" for n in range(LINES)]

    raw = iris.cli("cache", "read", tell_id, "--raw")
    assert raw.returncode == 0, raw.stderr
    printed = [json.loads(line) for line in raw.stdout.splitlines()]
    assert [line["message"]["content"][0]["text"] for line in printed[:-1]] == texts and printed[-1] == RESULT

    whole = iris.cli_json("cache", "read", tell_id)
    assert whole["tell"]["id"] == tell_id and len(whole["entries"]) == LINES + 1

    shown = iris.cli("cache", "read", tell_id)
    assert shown.returncode == 0, shown.stderr
    conversation = shown.stdout.splitlines()
    assert conversation[2:-1] == texts and conversation[-1].startswith("· done (success")

    http = Http(iris)
    status, body = http.json("GET", f"/api/tells/{tell_id}/transcript")
    assert status == 200 and body["type"] == "transcript_reply" and body["tell"]["id"] == tell_id
    assert [json.loads(e["raw"])["message"]["content"][0]["text"] for e in body["entries"][:-1]] == texts
    status, body = http.json("GET", f"/api/tells/{tell_id}/transcript?steps=true")
    assert status == 200 and body["entries"] == [] and [s["text"] for s in body["steps"][:-1]] == texts
    assert body["steps"][-1]["kind"] == "end" and body["steps"][-1]["answer"] == "all read"
    assert http.json("GET", "/api/tells/no-such-tell/transcript")[0] == 404  # refused before any page

    async with shim(iris, cwd=alpha) as client:
        text, data, is_error = await call(client, "team_cache_read", tellId=tell_id)
    assert not is_error and data["tell"]["id"] == tell_id and data["entries_truncated"]
    assert [e["line"] for e in data["entries"][-3:-1]] == ["assistant: line 9998", "assistant: line 9999"]
    assert text.endswith("assistant: line 9999\nresult (success): all read")
