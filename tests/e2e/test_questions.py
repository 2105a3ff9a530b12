"""Pending questions end to end: real irisd, real claude, the scripted model."""

from __future__ import annotations

from typing import Any

import pytest

from harness import Iris, wait_for

pytestmark = pytest.mark.claude


def pending(iris: Iris, *args: str) -> list[dict[str, Any]]:
    return list(iris.cli_json("questions", *args))


def test_a_persisted_tell_that_asks_becomes_a_question_answered_in_the_same_conversation(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    with iris.watch() as watcher:
        stored = iris.cli_json("tell", "alpha", "@ask deploy the fix", "--persist")
        (question,) = wait_for(lambda: pending(iris), what="a pending question")
        # pushed on the event stream when it appeared
        event = watcher.until(lambda e: e["type"] == "question_event", what="the question's event")["question"]
    assert event is not None and event["id"] == question["id"]
    assert question["to_team"] == "alpha" and question.get("from_team") is None
    assert question["status"] == "pending" and question["confidence"] >= 0.9
    assert question["question"] == "Do you want me to go ahead? (echo #1: deploy the fix)"
    delivered = iris.cli_json("notifications", "--all")
    assert delivered[0]["id"] == stored["id"] and delivered[0]["tell_id"] == question["tell_id"]

    human = iris.cli("questions")
    assert human.returncode == 0 and question["id"] in human.stdout and "external->alpha" in human.stdout

    answered = iris.cli("answer", question["id"], "yes, go ahead")
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == "echo #2: yes, go ahead\n"  # turn 2 of the same conversation
    assert pending(iris) == []
    (closed,) = pending(iris, "--all")
    assert closed["status"] == "answered" and closed["answer"] == "yes, go ahead"
    listed = iris.cli("questions", "--all")  # nothing pending: no "answer with" hint
    assert question["id"] in listed.stdout and "answer with" not in listed.stderr
    answer_tell = iris.cli_json("result", closed["answer_tell_id"])
    first_tell = iris.cli_json("result", question["tell_id"])
    assert answer_tell["session_id"] == first_tell["session_id"] == question["session_id"]

    again = iris.cli_json("answer", question["id"], "twice", ok=False)
    assert again["error"]["code"] == "invalid_request" and "already answered" in again["error"]["message"]


def test_a_waiting_caller_gets_the_answer_and_no_question(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    answer = iris.cli("tell", "alpha", "@ask shall I?")
    assert answer.returncode == 0 and answer.stdout.startswith("Do you want me to go ahead?")
    result_waited = iris.cli_json("tell", "alpha", "@slow:300 @ask again", "--timeout", "-1")
    assert iris.cli_json("result", result_waited["id"], "--wait", "60000")["status"] == "completed"
    assert pending(iris, "--all") == []  # someone read both answers


def test_a_tell_nobody_waits_for_asks_then_is_dismissed_or_expires(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()  # the default TTL (a week): the first question waits for its dismissal
    sent = iris.cli_json("tell", "alpha", "@ask rotate the keys", "--timeout", "-1")
    assert sent["status"] == "in_progress"
    (question,) = wait_for(lambda: pending(iris), what="a pending question")
    assert question["tell_id"] == sent["id"]
    dismissed = iris.cli_json("dismiss", question["id"])
    assert dismissed["status"] == "dismissed" and "(cli)" in dismissed["closed_by"]

    iris.settings["questions"] = {"ttl": 1000}  # the shortest: questions asked from now on expire
    iris.write_config()
    assert iris.cli("reload").returncode == 0
    again = iris.cli_json("tell", "alpha", "@ask rotate them now", "--timeout", "-1")
    # Read from the whole list: under load the second question may expire before it is seen pending.
    (second,) = wait_for(lambda: [q for q in pending(iris, "--all") if q["tell_id"] == again["id"]],
                         what="a second question")
    expired = wait_for(
        lambda: [q for q in pending(iris, "--all") if q["id"] == second["id"] and q["status"] == "expired"],
        what="the question to expire",
    )
    assert expired and pending(iris) == []


def test_a_plain_answer_or_a_failed_tell_is_no_question(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    plain = iris.cli_json("tell", "alpha", "all done", "--timeout", "-1")
    failed = iris.cli_json("tell", "alpha", "@error:400 is this broken?", "--timeout", "-1")
    for tell in (plain, failed):
        wait_for(lambda t=tell: iris.cli_json("result", t["id"], ok=False)["status"] != "in_progress",
                 what="the tell's end")
    assert pending(iris, "--all") == []
