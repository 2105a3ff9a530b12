"""Spare claudes (settings.sessions.spares) with the real claude and the scripted model: a new
pair's first tell is answered by a claude that was already up, which the pair then keeps
as its own (its session, its token), and a new spare takes its place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import Iris, transcript_file, wait_for
from irisd.pool.spares import BLOCKED, HOOKS_OFF
from protocol.messages import GetPair, GetStatus, ListSessions, StatusReply
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude


def spares(iris: Iris, team: str) -> list[int]:
    status = iris.request(GetStatus())
    assert isinstance(status, StatusReply)
    return status.spares.get(team, [])


def test_a_spare_answers_a_new_pairs_first_tell_and_is_replaced(iris: Iris) -> None:
    iris.settings["sessions"] = {"spares": 1}
    iris.add_team("alpha")
    iris.add_team("beta", sessions={"spares": 0})  # the team's own count
    iris.start()
    (first,) = wait_for(lambda: spares(iris, "alpha"), what="alpha's spare up")
    assert spares(iris, "beta") == []

    told: dict[str, Any] = iris.cli_json("tell", "alpha", "hello")
    assert told["status"] == "completed" and told["text"] == "echo #1: hello" and told["new_session"], told
    pair = iris.request(GetPair(to_team="alpha")).process
    assert pair.pid == first  # the process that was up before the tell answered it
    assert pair.session_id == told["session_id"]
    (second,) = wait_for(lambda: spares(iris, "alpha"), what="a new spare")
    assert second != first

    # Its conversation is the pair's: it goes on, on that claude and after a restart of it.
    assert iris.cli_json("tell", "alpha", "again")["text"] == "echo #2: again"
    assert iris.cli("sleep", "alpha").returncode == 0
    resumed = iris.cli_json("tell", "alpha", "after a sleep")
    assert resumed["text"] == "echo #3: after a sleep" and resumed["session_id"] == told["session_id"]

    # Its token speaks for the pair: a tell it makes through the Iris tools is alpha's, in its chain.
    nested = iris.cli_json("tell", "alpha", '@tool:mcp__iris__team_tell {"toTeam": "beta", "message": "hi beta"}',
                           "--from", "beta")
    assert nested["status"] == "completed", nested
    assert iris.request(GetPair(to_team="alpha", from_team="beta")).process.pid == second
    (asked,) = iris.cli_json("report", "beta", "--from", "alpha")
    assert asked["message"] == "hi beta" and asked["chain_id"] == nested["chain_id"], asked

    # A thread's new conversation takes a spare too, as a conversation of its own.
    (third,) = wait_for(lambda: spares(iris, "alpha"), what="a spare after beta->alpha took one")
    threaded = iris.cli_json("tell", "alpha", "in a thread", "--thread", "t1")
    assert threaded["text"] == "echo #1: in a thread" and threaded["thread"] == "t1", threaded
    assert iris.request(GetPair(to_team="alpha", thread="t1")).process.pid == third
    listing = {s.thread: s.session_id for s in iris.request(ListSessions(to_team="alpha")).sessions
               if s.from_team is None}
    assert listing == {"": told["session_id"], "t1": threaded["session_id"]}
    assert iris.cli_json("tell", "alpha", "the default goes on")["text"] == "echo #4: the default goes on"


def test_a_spare_gives_its_slot_to_a_pair_and_comes_back_when_there_is_room(iris: Iris) -> None:
    iris.settings["maxProcesses"] = 1
    folder = iris.add_team("alpha", sessions={"spares": 1})
    iris.add_team("beta")
    iris.start()
    (spare,) = wait_for(lambda: spares(iris, "alpha"), what="alpha's spare up")
    sessions = transcript_file(iris, folder, "*").parent
    assert len(list(sessions.glob("*.jsonl"))) == 1  # what its warm-up's blocked prompt left
    assert iris.cli_json("tell", "beta", "hi")["status"] == "completed"  # the one slot: the spare's went
    wait_for(lambda: not Path(f"/proc/{spare}").exists(), what="the spare stopped")
    wait_for(lambda: not list(sessions.glob("*.jsonl")), what="the untaken spare's session file removed")
    assert spares(iris, "alpha") == []  # and no spare evicts a pair to come back
    assert iris.cli("sleep", "beta").returncode == 0
    (again,) = wait_for(lambda: spares(iris, "alpha"), what="a spare in the freed slot")
    assert again != spare


def test_a_spare_warms_up_before_it_is_offered_with_no_model_request_and_no_turn(
    iris: Iris, model: ScriptedModel
) -> None:
    # claude builds what a session's first turn sends the model when first asked; a spare asks
    # it (its context usage) before it is offered, then submits a prompt a hook blocks (added
    # and removed again), so that its first tell finds that built and that code run.
    iris.add_team("alpha", sessions={"spares": 1})
    asked = len(model.posts)
    iris.start()
    (pid,) = wait_for(lambda: spares(iris, "alpha"), what="alpha's spare up")
    (ready,) = [json.loads(line) for line in iris.log().splitlines() if '"a spare claude is ready"' in line]
    assert ready["pid"] == pid and ready["warm_up"] == BLOCKED, ready  # this claude knows the requests
    assert model.posts[asked:] == []  # nothing asked of the model, no count_tokens

    told = iris.cli_json("tell", "alpha", "hello")
    assert told["text"] == "echo #1: hello", told  # the warm-up is no turn of the conversation
    assert [path for path, _ in model.posts[asked:]] == ["/v1/messages"]


def test_a_team_whose_settings_turn_hooks_off_gets_a_spare_with_no_model_request(
    iris: Iris, model: ScriptedModel
) -> None:
    # No hook runs in this team's claude, so a throw-away prompt would reach the model (a paid
    # request, and a turn): the spare asks claude its settings first and leaves the prompt out.
    folder = iris.add_team("alpha", sessions={"spares": 1})
    (folder / ".claude").mkdir()
    (folder / ".claude" / "settings.json").write_text(json.dumps({"disableAllHooks": True}))
    asked = len(model.posts)
    iris.start()
    (pid,) = wait_for(lambda: spares(iris, "alpha"), what="alpha's spare up")
    (ready,) = [json.loads(line) for line in iris.log().splitlines() if '"a spare claude is ready"' in line]
    assert ready["pid"] == pid and ready["warm_up"] == HOOKS_OFF, ready
    assert model.posts[asked:] == []  # nothing asked of the model
    told = iris.cli_json("tell", "alpha", "hello")
    assert told["text"] == "echo #1: hello", told  # its first tell is its conversation's first turn


def test_a_spares_first_tell_sends_the_model_what_a_claude_started_for_it_would(
    iris: Iris, model: ScriptedModel
) -> None:
    # The warm-up must leave the conversation as it is: the model is sent, on a spare's
    # first tell, the very request a claude started for that tell sends (but for the names).
    iris.add_team("alpha", sessions={"spares": 1})
    iris.add_team("beta")  # no spare: its first tell starts claude
    iris.start()
    wait_for(lambda: spares(iris, "alpha"), what="alpha's spare up")
    sent = []
    for team in ("alpha", "beta"):
        asked = len(model.posts)
        told = iris.cli_json("tell", team, "hello")
        assert told["text"] == "echo #1: hello" and told["new_session"], told
        (request,) = [body for path, body in model.posts[asked:] if path == "/v1/messages"]
        sent.append(json.loads(_as_alpha(json.dumps(request), team, told["session_id"])))
    on_spare, started = sent
    assert on_spare == started
    # Nor does the conversation kept on disk: what the next claude of each pair resumes and sends.
    resumed = []
    for team in ("alpha", "beta"):
        assert iris.cli("sleep", team).returncode == 0
        asked = len(model.posts)
        told = iris.cli_json("tell", team, "again")
        assert told["text"] == "echo #2: again" and not told.get("new_session"), told
        (request,) = [body for path, body in model.posts[asked:] if path == "/v1/messages"]
        resumed.append(json.loads(_as_alpha(json.dumps(request), team, told["session_id"])))
    assert resumed[0] == resumed[1]


def _as_alpha(request: str, team: str, session_id: str) -> str:
    """A request as team alpha's, its session id as such: what is the team's or the session's."""
    return request.replace(session_id, "SESSION").replace(team, "alpha")


def test_the_warm_up_hook_comes_and_goes_and_the_childs_own_flag_settings_stay(
    model: ScriptedModel, tmp_path: Path
) -> None:
    """The spare's hook goes into claude's flag settings, the layer ``--settings`` set with
    the child's own (``crossSessionInbound: refuse``): adding and removing it must leave
    those as they were (a claude whose ``apply_flag_settings`` replaced the layer would take
    other sessions' messages)."""
    from e2e.stream_claude import Claude
    from irisd.claude.command import CHILD_SETTINGS
    from irisd.claude.wire import flag_settings_request, settings_request
    from irisd.pool.spares import BLOCKING_HOOK, NO_HOOKS

    claude = Claude(tmp_path / "claude", model.base_url, "--settings", json.dumps(CHILD_SETTINGS))

    def flag_settings(request_id: str) -> dict[str, Any]:
        answered = claude.control(settings_request(request_id), request_id)["response"]
        (flags,) = [source["settings"] for source in answered["sources"] if source["source"] == "flagSettings"]
        settings: dict[str, Any] = flags
        return settings

    try:
        assert flag_settings("before") == CHILD_SETTINGS
        claude.control(flag_settings_request("hook", BLOCKING_HOOK), "hook")
        assert flag_settings("hooked") == {**CHILD_SETTINGS, **BLOCKING_HOOK}
        claude.control(flag_settings_request("unhook", NO_HOOKS), "unhook")
        assert flag_settings("after") == CHILD_SETTINGS
    finally:
        claude.close()
