from __future__ import annotations

import json

from iris_common.paths import IrisPaths, escape_project_path
from irisd.claude.command import claude_argv
from irisd.claude.wire import (
    AssistantLine,
    GarbageLine,
    ResultLine,
    StreamEventLine,
    SystemLine,
    UnknownLine,
    decode_line,
    interrupt_request,
    line_type,
    user_turn,
)


def test_known_lines_decode_and_unknown_fields_are_ignored() -> None:
    line = decode_line(b'{"type":"system","subtype":"init","session_id":"s1","tools":["Bash"]}')
    assert line == SystemLine(subtype="init", session_id="s1")
    result = decode_line(
        b'{"type":"result","subtype":"success","is_error":false,"result":"done",'
        b'"total_cost_usd":0.5,"usage":{"input_tokens":3},"brand_new_field":1}'
    )
    assert isinstance(result, ResultLine) and result.result == "done" and result.total_cost_usd == 0.5
    assistant = decode_line(
        b'{"type":"assistant","message":{"content":[{"type":"text","text":"a"},'
        b'{"type":"tool_use","id":"t","name":"Bash","input":{}},{"type":"text","text":"b"}]}}'
    )
    assert isinstance(assistant, AssistantLine) and assistant.text() == "ab"
    delta = decode_line(
        b'{"type":"stream_event","event":{"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"tok"}}}'
    )
    assert isinstance(delta, StreamEventLine) and delta.text_delta() == "tok"


def test_strange_lines_never_raise() -> None:
    assert decode_line(b'{"type":"brand_new"}') == UnknownLine(type="brand_new")
    assert decode_line(b'{"no_type":1}') == UnknownLine(type="?")
    assert isinstance(decode_line(b"Segmentation fault"), GarbageLine)
    assert isinstance(decode_line(b"[" * 5000), GarbageLine)
    assert isinstance(decode_line(b'{"type":"result","is_error":"yes"}'), UnknownLine)


def test_stdin_lines_are_the_stream_json_shapes() -> None:
    turn = json.loads(user_turn("hi\nthere"))
    assert turn == {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": "hi\nthere"}]},
    }
    assert user_turn("x").endswith(b"\n") and user_turn("a\nb").count(b"\n") == 1
    interrupt = json.loads(interrupt_request("r1"))
    assert interrupt == {"type": "control_request", "request_id": "r1", "request": {"subtype": "interrupt"}}


def test_first_spawn_creates_the_session_later_ones_resume_it() -> None:
    new = claude_argv("claude", session_id="u1", resume=False)
    assert new[new.index("--session-id") + 1] == "u1" and "--resume" not in new
    again = claude_argv("claude", session_id="u1", resume=True, permissions="skip")
    assert again[again.index("--resume") + 1] == "u1" and "--dangerously-skip-permissions" in again
    for flag in ("-p", "--verbose", "--include-partial-messages"):
        assert flag in new


def test_project_folders_are_escaped_like_claude_does() -> None:
    assert escape_project_path("/tmp/my_proj.v2/sub dir") == "-tmp-my-proj-v2-sub-dir"
    assert escape_project_path("/home/é") == "-home--"


def test_locations_follow_the_environment() -> None:
    paths = IrisPaths.from_env({"IRIS_HOME": "/h", "XDG_RUNTIME_DIR": "/run/user/7"})
    assert str(paths.socket) == "/run/user/7/iris/irisd.sock"
    assert str(paths.database) == "/h/data/iris.db"
    assert str(IrisPaths.from_env({"IRIS_HOME": "/h"}).socket) == "/h/run/irisd.sock"
    assert str(IrisPaths.from_env({"IRIS_HOME": "/h", "IRIS_SOCKET": "/s"}).socket) == "/s"


def test_line_types_are_claudes_own_names() -> None:
    assert line_type(decode_line(b'{"type":"result"}')) == "result"
    assert line_type(decode_line(b'{"type":"stream_event","event":{}}')) == "stream_event"
    assert line_type(decode_line(b'{"type":"novel"}')) == "novel"
    assert line_type(decode_line(b"oops")) == "garbage"


def test_children_may_use_every_iris_tool_but_deciding_approvals() -> None:
    from iris_mcp.tools import TOOLS_BY_NAME

    argv = claude_argv("claude", session_id="u", resume=False, mcp_config="{}")
    allowed = argv[argv.index("--allowedTools") + 1 :]
    iris_tools = {rule.removeprefix("mcp__iris__") for rule in allowed if rule.startswith("mcp__iris__")}
    assert iris_tools == set(TOOLS_BY_NAME) - {"team_approve", "team_deny"}
    assert "mcp__iris__team_tell" in allowed and "mcp__iris__team_approve" not in allowed
    assert argv[argv.index("--permission-prompt-tool") + 1] == "stdio"


def test_an_api_retry_line_becomes_a_notice_for_the_people_waiting() -> None:
    # As claude 2.1.330 prints it (trimmed of ids).
    overloaded = decode_line(
        b'{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":584,'
        b'"error_status":529,"error":"overloaded","session_id":"s1"}'
    )
    assert isinstance(overloaded, SystemLine)
    assert overloaded.retry_notice() == (
        "claude is retrying the Anthropic API after HTTP 529 overloaded (attempt 1 of 10, next in 0.6 s)"
    )
    unauthorised = decode_line(
        b'{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2329,'
        b'"error_status":401,"error":"authentication_failed"}'
    )
    assert isinstance(unauthorised, SystemLine)
    assert unauthorised.retry_notice() == (
        "claude is retrying the Anthropic API after HTTP 401 authentication_failed (attempt 3 of 10, next in "
        "2.3 s); check irisd's credentials (ANTHROPIC_API_KEY, or log in with 'claude')"
    )
    odd = decode_line(b'{"type":"system","subtype":"api_retry","attempt":"2","error":{"kind":"?"}}')
    assert isinstance(odd, SystemLine) and odd.retry_notice() == (
        "claude is retrying the Anthropic API after {'kind': '?'} (attempt 2)"
    )
    status = decode_line(b'{"type":"system","subtype":"status","status":"requesting"}')
    assert isinstance(status, SystemLine) and status.retry_notice() is None
