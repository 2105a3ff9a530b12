"""The scripted Messages API stand-in, spoken to over real HTTP (no claude)."""

from __future__ import annotations

import http.client
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import wait_for
from scripted_model.model import ScriptedModel
from scripted_model.planner import parse_directives, plan_reply, split_chunks

JSON = dict[str, Any]
REPO = Path(__file__).resolve().parents[2]
REMINDER = {"type": "text", "text": "<system-reminder>\nbe nice\n</system-reminder>\n"}
BASH = {"name": "Bash", "description": "run a command", "input_schema": {"type": "object"}}


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


# -- helpers -----------------------------------------------------------------


def user(text: str) -> JSON:
    """A user turn as the CLI sends it: a reminder block, then the text."""
    return {"role": "user", "content": [REMINDER, {"type": "text", "text": text}]}


def assistant(text: str) -> JSON:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def body(*messages: JSON, stream: bool = True) -> JSON:
    """A main-loop request like the CLI's: tools, thinking, a trailing system entry."""
    return {
        "model": "claude-test-1",
        "max_tokens": 1000,
        "stream": stream,
        "tools": [BASH],
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": []},
        "messages": [*messages, {"role": "system", "content": [{"type": "text", "text": "env"}]}],
    }


def post(model: ScriptedModel, payload: JSON | bytes, path: str = "/v1/messages?beta=true") -> Any:
    """POST and return (status, body): parsed JSON, or the SSE events of a stream."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    request = urllib.request.Request(model.base_url + path, data=data, method="POST")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read().decode()
            if response.headers["Content-Type"].startswith("text/event-stream"):
                return response.status, parse_sse(raw)
            return response.status, json.loads(raw)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def get(model: ScriptedModel, path: str, method: str = "GET") -> tuple[int, bytes]:
    request = urllib.request.Request(model.base_url + path, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read()


def parse_sse(raw: str) -> list[tuple[str, JSON]]:
    """``event:``/``data:`` frames -> [(event name, data)], checking they agree."""
    events = []
    for frame in raw.split("\n\n"):
        if not frame.strip():
            continue
        fields = dict(line.split(": ", 1) for line in frame.splitlines())
        data = json.loads(fields["data"])
        assert data["type"] == fields["event"]
        events.append((fields["event"], data))
    return events


def stream(model: ScriptedModel, payload: JSON) -> list[tuple[str, JSON]]:
    status, events = post(model, payload)
    assert status == 200
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[2:-3]) == {"content_block_delta"}
    return list(events)


def deltas(events: list[tuple[str, JSON]]) -> list[JSON]:
    return [data["delta"] for name, data in events if name == "content_block_delta"]


def text_of(events: list[tuple[str, JSON]]) -> str:
    pieces = deltas(events)
    assert all(d["type"] == "text_delta" for d in pieces)
    return "".join(d["text"] for d in pieces)


def stop_reason(events: list[tuple[str, JSON]]) -> str:
    return str(events[-2][1]["delta"]["stop_reason"])


# -- the directive language ------------------------------------------------------


def test_parse_directives() -> None:
    assert parse_directives("hello") == ([], "hello")
    directives, rest = parse_directives("  @slow:5 @hang  @tool:Bash {} tail")
    assert [(d.name, d.arg) for d in directives] == [("slow", "5"), ("hang", None), ("tool", "Bash")]
    assert rest == "{} tail"
    assert parse_directives("@someone hi @hang") == ([], "@someone hi @hang")
    assert parse_directives("@hang")[1] == ""


def test_split_chunks_is_exact_and_lossless() -> None:
    text = "echo #1: one two three"
    assert split_chunks(text, None) == ["echo ", "#1: ", "one ", "two ", "three"]
    for count in (1, 2, 3, 5, 9, 40):
        pieces = split_chunks(text, count)
        assert len(pieces) == count
        assert "".join(pieces) == text


def test_echo_counts_user_prompts_and_ignores_reminders(model: ScriptedModel) -> None:
    conversation = [
        user("first"),
        assistant("echo #1: first"),
        {"role": "user", "content": [REMINDER]},  # a reminder alone is no prompt
        assistant("ok"),
        {"role": "user", "content": "second, as a plain string"},
        assistant("echo #2: ..."),
        user("third one"),
    ]
    events = stream(model, body(*conversation))
    assert text_of(events) == "echo #3: third one"
    message = events[0][1]["message"]
    assert message["model"] == "claude-test-1"
    assert message["usage"]["input_tokens"] == 10 * 8 + 1
    assert events[-2][1]["usage"] == {"output_tokens": 4}
    assert stop_reason(events) == "end_turn"


def test_a_merged_message_after_a_failed_turn_counts_both_prompts(model: ScriptedModel) -> None:
    # After a failed (or interrupted) turn the CLI merges the old and new prompt into one message.
    merged = [
        REMINDER,
        {"type": "text", "text": "@error:400 first\n"},
        {"type": "text", "text": "[Request interrupted by user]\n"},
        {"type": "text", "text": "@chunks:2 second"},
    ]
    events = stream(model, body({"role": "user", "content": merged}))
    assert [d["text"] for d in deltas(events)] == ["echo ", "#2: second"]


def test_chunks_gives_exactly_k_deltas(model: ScriptedModel) -> None:
    for k in (1, 3, 7, 30):
        events = stream(model, body(user(f"@chunks:{k} alpha beta gamma delta")))
        assert len(deltas(events)) == k
        assert text_of(events) == "echo #1: alpha beta gamma delta"


def test_long_streams_w_words(model: ScriptedModel) -> None:
    events = stream(model, body(user("@long:50")))
    assert len(deltas(events)) == 50
    assert text_of(events).split() == [f"word{i}" for i in range(1, 51)]
    assert len(deltas(stream(model, body(user("@long:50 @chunks:5"))))) == 5


def test_slow_sleeps_before_each_delta(model: ScriptedModel) -> None:
    started = time.monotonic()
    events = stream(model, body(user("@slow:100 @chunks:4 a b c d")))
    assert time.monotonic() - started >= 0.4
    assert text_of(events) == "echo #1: a b c d"


def test_ask_asks_back(model: ScriptedModel) -> None:
    events = stream(model, body(user("@ask delete it all")))
    assert text_of(events) == "Do you want me to go ahead? (echo #1: delete it all)"


def test_bad_directive_argument_is_explained(model: ScriptedModel) -> None:
    assert text_of(stream(model, body(user("@chunks:many hi")))).startswith("scripted model: @chunks")
    assert "input is not JSON" in text_of(stream(model, body(user("@tool:Bash {oops"))))


def test_tool_call_then_result_then_no_loop(model: ScriptedModel) -> None:
    prompt = user('@chunks:3 @tool:Bash {"command": "echo hi > made.txt"}')
    events = stream(model, body(prompt))
    block = events[1][1]["content_block"]
    assert block["type"] == "tool_use" and block["name"] == "Bash" and block["input"] == {}
    pieces = deltas(events)
    assert len(pieces) == 3 and all(d["type"] == "input_json_delta" for d in pieces)
    assert json.loads("".join(d["partial_json"] for d in pieces)) == {"command": "echo hi > made.txt"}
    assert stop_reason(events) == "tool_use"

    call = {"role": "assistant", "content": [{**block, "input": {"command": "echo hi > made.txt"}}]}
    result = {"type": "tool_result", "tool_use_id": block["id"], "content": "hi", "is_error": False}
    done = stream(model, body(prompt, call, {"role": "user", "content": [result]}))
    assert text_of(done) == "tool Bash said: hi"
    assert stop_reason(done) == "end_turn"

    failed = {**result, "content": [{"type": "text", "text": "denied"}], "is_error": True}
    assert text_of(stream(model, body(prompt, call, {"role": "user", "content": [failed]}))) == (
        "tool Bash failed: denied"
    )

    # A later request of the same turn (e.g. a task notification) must not call the tool again.
    notification = {"role": "user", "content": [REMINDER]}
    later = body(prompt, call, {"role": "user", "content": [result]}, assistant("..."), notification)
    assert text_of(stream(model, later)) == "tool Bash said: hi"

    # The next turn of the session is a plain echo again.
    next_turn = body(prompt, call, {"role": "user", "content": [result]}, assistant("..."), user("hi"))
    assert text_of(stream(model, next_turn)) == "echo #2: hi"


def test_side_requests_never_hang_or_call_tools(model: ScriptedModel) -> None:
    for text in ("@hang x", '@tool:Bash {"command": "ls"}', "@error:400", "@stall"):
        side = {"model": "m", "max_tokens": 32, "stream": True, "tools": [], "messages": [user(text)]}
        assert text_of(stream(model, side)) == "echo #1: ok"
    status, message = post(model, {"model": "m", "max_tokens": 1, "messages": [user("@hang Hi")]})
    assert status == 200 and message["content"] == [{"type": "text", "text": "echo #1: ok"}]


def test_non_streaming_request_gets_a_json_message(model: ScriptedModel) -> None:
    status, message = post(model, body(user("hello"), stream=False))
    assert status == 200
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["content"] == [{"type": "text", "text": "echo #1: hello"}]
    assert message["stop_reason"] == "end_turn" and message["model"] == "claude-test-1"
    status, message = post(model, body(user('@tool:Read {"file_path": "/x"}'), stream=False))
    assert message["content"][0]["input"] == {"file_path": "/x"}
    assert message["stop_reason"] == "tool_use"


# -- faults ------------------------------------------------------------------------


def test_error_directive_answers_that_status(model: ScriptedModel) -> None:
    assert post(model, body(user("@error:400"))) == (
        400,
        {"type": "error", "error": {"type": "invalid_request_error", "message": "scripted error 400"}},
    )
    status, error = post(model, body(user("@error:529 too busy")))
    assert status == 529
    assert error["error"] == {"type": "overloaded_error", "message": "too busy"}


def test_flaky_overloads_the_first_k_requests_of_a_turn_then_answers(model: ScriptedModel) -> None:
    first_turn = body(user("@flaky:2 hello"))
    for _ in range(2):
        status, error = post(model, first_turn)
        assert (status, error["error"]["type"]) == (529, "overloaded_error")
    assert text_of(stream(model, first_turn)) == "echo #1: hello"
    second_turn = body(user("@flaky:2 hello"), assistant("echo #1: hello"), user("@flaky:2 hello"))
    assert post(model, second_turn)[0] == 529  # a new turn fails afresh


def _raw_request(model: ScriptedModel, payload: JSON) -> http.client.HTTPConnection:
    host, port = model.base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("POST", "/v1/messages", json.dumps(payload), {"Content-Type": "application/json"})
    return conn


def test_hang_sends_nothing_until_stop(model: ScriptedModel) -> None:
    outcome: list[str] = []
    conn = _raw_request(model, body(user("@hang wait")))

    def wait_for_answer() -> None:
        try:
            conn.getresponse()
            outcome.append("answered")
        except (http.client.RemoteDisconnected, ConnectionError):
            outcome.append("disconnected")

    waiter = threading.Thread(target=wait_for_answer)
    waiter.start()
    waiter.join(0.5)
    assert outcome == []  # still nothing after half a second
    model.stop()
    waiter.join(30)
    conn.close()
    assert not waiter.is_alive()  # ended by stop(): a held request is never answered otherwise
    assert outcome == ["disconnected"]


def test_hang_ends_when_the_client_leaves(model: ScriptedModel) -> None:
    conn = _raw_request(model, body(user("@hang")))
    wait_for(lambda: len(model._connections) == 1, 5, "the model to hold the connection")
    conn.close()
    wait_for(lambda: not model._connections, 5, "the handler to let go of the connection")


def test_stall_sends_a_first_chunk_then_nothing(model: ScriptedModel) -> None:
    conn = _raw_request(model, body(user("@stall one two three")))
    response = conn.getresponse()
    assert response.status == 200
    lines = [response.readline() for _ in range(9)]  # three frames of event, data, blank
    events = parse_sse(b"".join(lines).decode())
    assert [name for name, _ in events] == ["message_start", "content_block_start", "content_block_delta"]
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "echo "}
    model.stop()
    assert response.read() == b""  # the stream ends (is cut) without message_stop
    conn.close()


def test_gate_holds_after_the_first_chunk_until_the_test_opens_it(model: ScriptedModel) -> None:
    conn = _raw_request(model, body(user("@gate:g1 one two three")))
    response = conn.getresponse()
    lines = [response.readline() for _ in range(9)]  # three frames of event, data, blank
    events = parse_sse(b"".join(lines).decode())
    assert [name for name, _ in events] == ["message_start", "content_block_start", "content_block_delta"]
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "echo "}
    wait_for(lambda: model.waiting_at("g1") == 1, 5, "the answer to wait at its gate")
    model.open_gate("g1")
    rest = parse_sse(response.read().decode())
    assert "".join(data["delta"]["text"] for name, data in rest if name == "content_block_delta") == "#1: one two three"
    assert rest[-1][0] == "message_stop" and model.waiting_at("g1") == 0
    conn.close()
    # An open gate lets later answers through at once; a non-streamed one waits like a streamed one.
    assert text_of(stream(model, body(user("@gate:g1 again")))) == "echo #1: again"
    model.open_gate("g2")
    status, message = post(model, body(user("@gate:g2 whole"), stream=False))
    assert status == 200 and message["content"] == [{"type": "text", "text": "echo #1: whole"}]
    assert text_of(stream(model, body(user("@gate nameless")))).startswith("scripted model: @gate needs a name")
    assert plan_reply(body(user('@gate:g3 @tool:Read {"file_path": "/x"}'))).gate == "g3"  # a tool call's too


def test_malformed_requests_get_400_and_the_server_lives_on(model: ScriptedModel) -> None:
    status, error = post(model, b"{not json")
    assert status == 400 and error["error"]["type"] == "invalid_request_error"
    assert post(model, b"[1, 2]")[0] == 400
    assert post(model, {"model": "m", "stream": True, "tools": [BASH]})[0] == 400  # no messages
    assert text_of(stream(model, body(user("still fine")))) == "echo #1: still fine"
    assert model.requests[-1]["messages"][0]["content"][1]["text"] == "still fine"


# -- other endpoints ----------------------------------------------------------------


def test_other_endpoints(model: ScriptedModel) -> None:
    status, counted = post(model, body(user("x")), path="/v1/messages/count_tokens?beta=true")
    assert status == 200 and counted == {"input_tokens": 21}
    assert get(model, "/api/hello")[0] == 200
    assert get(model, "/api/hello", method="HEAD") == (200, b"")
    status, page = get(model, "/v1/models")
    assert status == 200 and json.loads(page)["data"][0]["type"] == "model"
    status, missing = get(model, "/v1/nothing")
    assert status == 404
    assert json.loads(missing)["error"]["type"] == "not_found_error"
    assert post(model, {"a": 1}, path="/v2/else")[0] == 404
    assert [path for path, _ in model.posts] == ["/v1/messages/count_tokens", "/v2/else"]
    assert model.messages_requests() == []


# -- running it as a program --------------------------------------------------------


def test_main_prints_the_url_and_exits_0_on_sigterm() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "scripted_model", "--port", "0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 10)
            assert ready, "no listening line within 10 s"
            line = proc.stdout.readline().decode()
            assert line.startswith("listening on http://127.0.0.1:")
            url = line.split()[-1]
            request = urllib.request.Request(
                url + "/v1/messages", data=json.dumps(body(user("hi"))).encode(), method="POST"
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                assert text_of(parse_sse(response.read().decode())) == "echo #1: hi"
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0
    assert out == b"" and err == b""  # exactly the one line, nothing else


def test_again_calls_the_tool_k_times_in_one_turn(model: ScriptedModel) -> None:
    prompt = user('@again:2 @tool:Bash {"command": "date"}')
    first = stream(model, body(prompt))
    block = first[1][1]["content_block"]
    assert block["type"] == "tool_use"
    call = {"role": "assistant", "content": [{**block, "input": {"command": "date"}}]}
    result = {"type": "tool_result", "tool_use_id": block["id"], "content": "Mon", "is_error": False}
    second = stream(model, body(prompt, call, {"role": "user", "content": [result]}))
    assert second[1][1]["content_block"]["type"] == "tool_use"  # the second call
    block2 = second[1][1]["content_block"]
    again = {"role": "assistant", "content": [{**block2, "input": {"command": "date"}}]}
    result2 = {**result, "tool_use_id": block2["id"], "content": "Tue"}
    done = stream(model, body(prompt, call, {"role": "user", "content": [result]}, again,
                              {"role": "user", "content": [result2]}))
    assert text_of(done) == "tool Bash said: Tue"
