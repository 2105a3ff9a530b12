"""Permission relay with the real claude: the scripted model asks for Bash to write a
file; a person (or a policy) decides through irisd.

Most tests share one irisd (``shared``), each through teams of its own, except alpha, whose
warm claude several share (each leaves its folder as it found it, and no rule remembered);
those that need another approvalTimeout or restart irisd start their own."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Iris, started
from protocol.messages import ApprovalsReply, Decide, ListApprovals, ReadTranscript, TranscriptReply
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude

WRITE = '@tool:Bash {"command": "echo hi > made.txt"}'


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    """The irisd most tests share. Its approvals wait 2 minutes: a test that should never
    be asked fails within its own timeout if it is."""
    teams: dict[str, dict[str, Any]] = {
        "alpha": {},  # asks; its claude is shared (see the module's docstring)
        "canceller": {},
        "remembering": {},  # a claude of its own: it starts in the test, saying its permission mode
        "denier": {"permissions": "deny"},
        "skipper": {"skipPermissions": True},
        "allowed": {"allowedTools": ["Read", "Bash"]},
        "refused": {"folder": "b", "disallowedTools": ["Bash"]},
    }
    # claude refuses to skip permissions as root otherwise
    env = {"IS_SANDBOX": "1"} if os.geteuid() == 0 else {}
    with started(tmp_path_factory.mktemp("permissions"), model_url=model.base_url, claude=claude_bin, teams=teams,
                 settings={"approvalTimeout": 120000}, env=env) as iris:
        yield iris


@pytest.fixture
def shared(daemon: Iris) -> Iterator[Iris]:
    """The shared irisd; an approval a failed test left pending is denied after it, so
    that the next test's approval is the only one."""
    yield daemon
    pending = daemon.request(ListApprovals())
    assert isinstance(pending, ApprovalsReply), pending
    for approval in pending.approvals:
        daemon.request(Decide(approval_id=approval.id, allow=False, reason="the test before ended"))


def folder_of(iris: Iris, team: str) -> Path:
    return Path(iris.teams[team]["path"])


def approvals_of(iris: Iris, *tell_ids: str) -> list[dict[str, Any]]:
    """The approvals ever asked for these tells (``iris approvals --all``)."""
    return [a for a in iris.cli_json("approvals", "--all") if a["tell_id"] in tell_ids]


def pending_approval(iris: Iris, timeout: float = 60.0) -> dict[str, Any]:
    return iris.wait_for_approval(timeout)


def ask(iris: Iris, team: str = "alpha") -> tuple[dict[str, Any], dict[str, Any]]:
    """Start the file-writing tell; return it (awaiting approval) and its approval."""
    started = iris.cli_json("tell", team, WRITE, "--timeout", "-1")
    approval = pending_approval(iris)
    told = iris.cli_json("result", started["id"])
    assert told["tell_status"] == "awaiting_approval" and told["approval_id"] == approval["id"]
    assert approval["tool_name"] == "Bash" and approval["input"]["command"] == "echo hi > made.txt"
    return started, approval


def test_ask_then_approve_runs_the_tool(shared: Iris) -> None:
    folder = folder_of(shared, "alpha")
    try:
        started, approval = ask(shared)
        human = shared.cli("approvals")
        assert "$ echo hi > made.txt" in human.stdout and f"iris approve {approval['id'][:10]} " in human.stdout
        line = next(line for line in human.stdout.splitlines() if "iris approve" in line)
        assert len(line) <= 80, line  # the approve and deny commands fit a terminal
        decided = shared.cli_json("approve", approval["id"][:6])  # any unique prefix of its id
        assert decided["id"] == approval["id"]
        assert decided["status"] == "allowed" and "(cli)" in decided["decided_by"]
        done = shared.cli_json("result", started["id"], "--wait", "60000")
        assert done["status"] == "completed" and done["text"].startswith("tool Bash said:")
        assert (folder / "made.txt").read_text() == "hi\n"
        again = shared.cli("approve", approval["id"])
        assert again.returncode == 1 and "already allowed" in again.stderr
    finally:
        (folder / "made.txt").unlink(missing_ok=True)


def test_ask_then_deny_tells_the_model_why(shared: Iris) -> None:
    folder = folder_of(shared, "alpha")
    started, approval = ask(shared)
    shared.cli_json("deny", approval["id"], "--reason", "not on a Friday")
    done = shared.cli_json("result", started["id"], "--wait", "60000")
    assert done["status"] == "completed"
    assert "tool Bash failed:" in done["text"] and "not on a Friday" in done["text"]
    assert not (folder / "made.txt").exists()


def test_no_decision_in_time_means_deny(iris: Iris) -> None:
    folder = iris.add_team("alpha", responseTimeout=1000)
    iris.settings["approvalTimeout"] = 2500
    iris.start()
    iris.cli_json("tell", "alpha", "warm up")
    started = time.monotonic()
    done = iris.cli_json("tell", "alpha", WRITE)  # waits; the response timeout (1 s) must not fire
    assert time.monotonic() - started >= 2.4
    assert done["status"] == "completed" and "nobody decided within 2.5 s" in done["text"]
    assert not (folder / "made.txt").exists()
    (expired,) = iris.cli_json("approvals", "--all")
    assert expired["status"] == "denied" and expired["decided_by"] == "timeout"


def test_remember_allows_the_same_request_without_asking(iris: Iris) -> None:
    folder = iris.add_team("alpha")
    iris.start()
    started, approval = ask(iris)
    iris.cli_json("approve", approval["id"], "--remember")
    iris.cli_json("result", started["id"], "--wait", "60000")
    (folder / "made.txt").unlink()
    iris.stop()
    iris.start()  # a new claude process: only Iris's own rule can know
    done = iris.cli_json("tell", "alpha", WRITE)
    assert done["status"] == "completed" and done["text"].startswith("tool Bash said:")
    assert (folder / "made.txt").exists()
    assert len(iris.cli_json("approvals", "--all")) == 1  # nobody was asked again
    # the rule can be listed and forgotten; then the request is asked again
    [rule] = iris.cli_json("approvals", "rules")
    assert rule["id"] == approval["id"] and rule["tool_name"] == "Bash" and rule["from_team"] is None
    assert rule["input"]["command"] == "echo hi > made.txt"
    shown = iris.cli("approvals", "rules", "alpha").stdout
    assert approval["id"] in shown and "external->alpha" in shown and "echo hi > made.txt" in shown
    forgot = iris.cli("approvals", "forget", approval["id"])
    assert forgot.returncode == 0
    assert "forgot: external->alpha asks again for Bash `echo hi > made.txt`" in forgot.stdout
    again = iris.cli("approvals", "forget", approval["id"])
    assert again.returncode == 1 and "'iris approvals rules' lists them" in again.stderr
    assert iris.cli_json("approvals", "rules") == []
    iris.stop()
    iris.start()
    ask(iris)  # asked again


def test_deny_mode_refuses_without_asking(shared: Iris) -> None:
    folder = folder_of(shared, "denier")  # permissions: deny
    done = shared.cli_json("tell", "denier", WRITE)
    assert "tool Bash failed:" in done["text"] and "permissions: deny" in done["text"]
    assert not (folder / "made.txt").exists() and approvals_of(shared, done["id"]) == []


def test_skip_mode_runs_tools_unchecked(shared: Iris) -> None:
    folder = folder_of(shared, "skipper")  # skipPermissions: true
    try:
        done = shared.cli_json("tell", "skipper", WRITE)
        assert done["text"].startswith("tool Bash said:") and (folder / "made.txt").exists()
    finally:
        (folder / "made.txt").unlink(missing_ok=True)


def test_allow_and_deny_lists_decide_without_asking(shared: Iris) -> None:
    # were anyone asked, the tell would wait for the shared irisd's approvalTimeout and fail
    allowed, refused = folder_of(shared, "allowed"), folder_of(shared, "refused")
    try:
        done = shared.cli_json("tell", "allowed", WRITE)
        assert done["text"].startswith("tool Bash said:") and (allowed / "made.txt").exists()
        other = shared.cli_json("tell", "refused", WRITE)
        assert "tool Bash failed:" in other["text"] and not (refused / "made.txt").exists()
        assert approvals_of(shared, done["id"], other["id"]) == []
    finally:
        (allowed / "made.txt").unlink(missing_ok=True)


def test_a_cancelled_tell_expires_its_approval(shared: Iris) -> None:
    started, _ = ask(shared, "canceller")
    cancelled = shared.cli_json("cancel", started["id"])
    assert cancelled["tell_status"] == "interrupted"
    (expired,) = approvals_of(shared, started["id"])
    assert expired["status"] == "expired"
    unknown = shared.cli("approve", "a-" + "0" * 32)
    assert unknown.returncode == 1 and "no approval with id" in unknown.stderr


def tool(name: str, **arguments: Any) -> str:
    return f"@tool:{name} {json.dumps(arguments)}"


def permission_modes(iris: Iris, tell_id: str) -> set[str]:
    """The permission mode claude reported for the turn (its system/init lines; read over
    the socket: an ``iris cache read`` for each costs a Python start)."""
    transcript = iris.request(ReadTranscript(tell_id=tell_id))
    assert isinstance(transcript, TranscriptReply), transcript
    lines = [json.loads(e.raw) for e in transcript.entries if e.type == "system"]
    return {line["permissionMode"] for line in lines if line.get("subtype") == "init"}


def test_remember_allows_exactly_the_request_approved_and_nothing_more(shared: Iris) -> None:
    """The security bug of issue 20: remembering ``touch x`` once switched the pair's claude
    to acceptEdits and wrote a ``Bash(touch x *)`` rule into the team's repository."""
    folder = folder_of(shared, "remembering")
    made = [folder / name for name in ("notes.txt", "x", "y", "new.txt")]
    try:
        remember_exactly(shared, folder)
    finally:  # its folder as it was, and no rule left that a later tell could meet
        for path in made:
            path.unlink(missing_ok=True)
        for rule in shared.cli_json("approvals", "rules"):
            shared.cli_json("approvals", "forget", rule["id"])


def remember_exactly(iris: Iris, folder: Path) -> None:
    team = "remembering"
    (folder / "notes.txt").write_text("hello\n")
    touch_x = tool("Bash", command="touch x")
    started = iris.cli_json("tell", team, touch_x, "--timeout", "-1")
    approval = pending_approval(iris)
    assert approval["input"] == {"command": "touch x"}
    iris.cli_json("approve", approval["id"], "--remember")
    first = iris.cli_json("result", started["id"], "--wait", "60000")
    assert first["status"] == "completed" and (folder / "x").exists()
    modes = permission_modes(iris, started["id"])

    (folder / "x").unlink()
    again = iris.cli_json("tell", team, touch_x)  # the same request, on the same warm claude
    assert again["text"].startswith("tool Bash said:") and (folder / "x").exists()
    assert len(approvals_of(iris, started["id"], again["id"])) == 1  # nobody was asked again
    modes |= permission_modes(iris, again["id"])

    def asks(request: str) -> None:
        told = iris.cli_json("tell", team, request, "--timeout", "-1")
        waiting = pending_approval(iris)
        assert waiting["tell_id"] == told["id"], (request, waiting)
        iris.cli_json("deny", waiting["id"], "--reason", "not this one")
        done = iris.cli_json("result", told["id"], "--wait", "60000")
        assert "not this one" in done["text"], (request, done)
        modes.update(permission_modes(iris, told["id"]))

    asks(tool("Bash", command="touch y"))
    asks(tool("Bash", command="rm x"))
    asks(tool("Bash", command="touch x; rm -f notes.txt"))
    read = iris.cli_json("tell", team, tool("Read", file_path=str(folder / "notes.txt")))
    assert "hello" in read["text"]  # read in this folder needs no approval; Edit wants it read first
    asks(tool("Edit", file_path=str(folder / "notes.txt"), old_string="hello", new_string="bye"))
    asks(tool("Write", file_path=str(folder / "new.txt"), content="made"))
    assert (folder / "x").exists() and (folder / "notes.txt").read_text() == "hello\n"
    assert not (folder / "y").exists() and not (folder / "new.txt").exists()
    assert modes == {"default"}, modes  # the pair's claude never left the default mode
    assert not list(folder.glob(".claude/settings*.json")), "Iris wrote into the team's repository"

    iris.cli_json("approvals", "forget", approval["id"])
    assert iris.cli_json("approvals", "rules") == []
    asks(touch_x)  # forgotten completely: asked again, on the same claude
    assert modes == {"default"} and not list(folder.glob(".claude/settings*.json"))
