"""A pair's conversation over months, with the real claude and the scripted model: Iris
compacts it between tells past settings.sessions.compactAt, archives it, and a tell restores it."""

from __future__ import annotations

from typing import Any

import pytest

from harness import Iris, wait_for
from protocol.messages import GetPair, Tell

pytestmark = pytest.mark.claude


def session_of(iris: Iris, team: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = iris.cli_json("sessions", team)
    assert len(found) == 1, found
    return found[0]


def test_iris_compacts_between_tells_and_the_next_tell_continues_the_conversation(iris: Iris) -> None:
    # 1% of a 1000-token window: the first answer (the scripted model counts 10 tokens a message) is past it.
    iris.settings["sessions"] = {"compactAt": 1, "contextWindow": 1000}
    iris.add_team("alpha")
    iris.start()
    with iris.watch("alpha") as watcher:
        first = iris.request(Tell(to_team="alpha", message="@slow:700 @chunks:4 remember apples", timeout_ms=-1))
        wait_for(lambda: iris.cli_json("result", first.tell.id)["tell_status"] == "running", what="the first tell")
        second = iris.request(Tell(to_team="alpha", message="and pears", timeout_ms=-1))  # arrives meanwhile
        phase = watcher.until(
            lambda e: e.get("tell_id") == second.tell.id and e["type"] == "tell_phase"
            and e["phase"]["name"] == "compacting",
            what="the second tell waiting for the compaction",
        )
        assert phase["phase"]["text"].startswith("compacting the conversation"), phase
        done = iris.cli_json("result", second.tell.id, "--wait", "60000")
    answered = iris.cli_json("result", first.tell.id)
    assert answered["status"] == "completed" and answered["text"] == "echo #1: remember apples"
    # The compaction ran between the two, as a tell of its own kind, in the pair's history.
    history = iris.cli_json("report", "alpha")
    history.sort(key=lambda t: t["created_at"])
    kinds = [(t.get("kind", "tell"), t["message"]) for t in history]
    compaction = history[2]  # made when the first tell ended (the second tell asks for one more)
    assert compaction["status"] == "completed" and compaction["text"] == "Compacted", compaction
    assert compaction["started_at"] >= answered["finished_at"]  # never while a tell ran
    assert done["started_at"] >= compaction["finished_at"]
    assert kinds == [("tell", "@slow:700 @chunks:4 remember apples"), ("tell", "and pears"),
                     ("compaction", "/compact"), ("compaction", "/compact")], kinds
    # The next tell continued the same conversation: same session, the model saw earlier turns.
    assert done["status"] == "completed" and not done.get("new_session"), done
    assert done["session_id"] == answered["session_id"]
    assert done["text"].endswith(": and pears") and not done["text"].startswith("echo #1:"), done
    session = wait_for(lambda: (s := session_of(iris, "alpha")).get("compactions") == 2 and s, what="recorded")
    # The second compaction (asked by the second tell) may still have run when the history was
    # read: read it again once that one has ended, with its cost.
    history = wait_for(lambda: (h := sorted(iris.cli_json("report", "alpha"), key=lambda t: t["created_at"]))
                       and h[3]["status"] == "completed" and h, what="the second compaction's end")
    assert session["status"] == "active" and session["compact_trigger"] == "iris"
    assert session["last_compacted_at"] >= history[3]["started_at"]
    assert session["compact_tokens_before"] > 0 and session["compact_tokens_after"] > 0
    assert session["compact_messages_before"] == session["message_count"] == 2  # compactions are no messages
    assert session["context_window"] == 1000 and session["context_tokens"] > 0
    # Its cost is the pair's, marked as maintenance.
    costs = iris.cli_json("costs", "--by", "pair")
    pair = next(r for r in costs["rows"] if r["key"] == "external->alpha")
    assert pair["maintenance_usd"] == pytest.approx(compaction["cost_usd"] + history[3]["cost_usd"]), pair
    assert 0 < pair["maintenance_usd"] < pair["cost_usd"], pair
    shown = iris.cli("sessions")
    assert shown.returncode == 0 and "context" in shown.stdout and "by Iris" in shown.stdout, shown.stdout


def test_no_compaction_below_the_threshold(iris: Iris) -> None:
    iris.add_team("alpha")  # the default: 70% of claude's window (its model's: a million tokens here)
    iris.start()
    iris.cli_json("tell", "alpha", "one")
    iris.cli_json("tell", "alpha", "two")
    session = session_of(iris, "alpha")
    assert session.get("compactions", 0) == 0 and session["status"] == "active"
    assert session["context_tokens"] > 0 and session["context_window"] == 1_000_000
    assert all(t.get("kind") != "compaction" for t in iris.cli_json("report", "alpha"))


def test_an_archived_pair_is_restored_by_its_next_tell_and_continues_the_conversation(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    assert iris.cli_json("tell", "alpha", "one")["text"] == "echo #1: one"
    # 'iris sessions archive' (as the issue and a person who just ran 'iris sessions' write it)
    # is 'iris session archive'; the restore below uses the singular.
    archived = iris.cli_json("sessions", "archive", "external", "alpha")
    assert archived["status"] == "archived" and archived["archived_at"] > 0
    assert iris.request(GetPair(to_team="alpha")).process.state == "stopped"  # its claude stopped
    assert iris.cli_json("sessions") == []  # the others only
    listed = iris.cli_json("sessions", "--archived")
    assert [(s["to_team"], s["status"], s["message_count"]) for s in listed] == [("alpha", "archived", 1)]
    with iris.watch("alpha") as watcher:
        second = iris.cli_json("tell", "alpha", "two")
        restored = watcher.until(lambda e: e["type"] == "session_event", what="the restore")
    assert restored["change"] == "restored" and restored["session"]["status"] == "active", restored
    # The same conversation: the scripted model counts the earlier turn.
    assert second["text"] == "echo #2: two" and not second.get("new_session"), second
    assert second["session_id"] == archived["session_id"]
    assert session_of(iris, "alpha")["status"] == "active"
    again = iris.cli("session", "restore", "external", "alpha")
    assert again.returncode != 0 and "is not archived" in again.stderr, again.stderr


def test_restore_fresh_starts_a_new_conversation_and_says_so(iris: Iris) -> None:
    iris.settings["sessions"] = {"restore": "fresh"}
    iris.add_team("alpha")
    iris.start()
    first = iris.cli_json("tell", "alpha", "one")
    iris.cli_json("session", "archive", "external", "alpha")
    second = iris.cli_json("tell", "alpha", "two")
    assert second["text"] == "echo #1: two" and second["new_session"] is True, second
    assert second["session_id"] != first["session_id"]
