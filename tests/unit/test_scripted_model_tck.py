"""The scripted model's TCK mode: a TCK messageId in the prompt picks the scenario's answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from irisd.questions.detector import Detector
from scripted_model.planner import plan_reply
from scripted_model.tck import INPUT_REQUIRED_TEXT, SCENARIOS, message_ids, scenario_for

FEATURES = Path(__file__).resolve().parents[2] / "third_party" / "a2a-tck" / "scenarios"
TOOLS = [{"name": "Bash", "description": "run a command", "input_schema": {"type": "object"}}]


def body(prompt: str) -> dict[str, Any]:
    """A main-loop request (tools, thinking) whose prompt is ``prompt``."""
    return {
        "model": "scripted",
        "tools": TOOLS,
        "thinking": {"type": "adaptive"},
        "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
    }


def test_every_prefix_of_the_tck_scenarios_has_an_answer() -> None:
    named = set()
    for feature in FEATURES.glob("*.feature"):
        for line in feature.read_text().splitlines():
            if "with prefix" in line:
                named.add(line.split('"')[1])
    assert named and named == set(SCENARIOS)


@pytest.mark.parametrize(
    ("prompt", "text"),
    [
        ("tck-complete-task-1a2b3c4d\n\nHello from TCK", "Hello from TCK"),
        ("[A2A message tck-artifact-text-1a2b3c4d]\nTCK artifact test", "Generated text content"),
        ("[A2A message tck-artifact-file-url-1a2b3c4d] x", "(file output.txt at https://example.com/output.txt)"),
        ("tck-stream-artifact-text-9 x", "Streamed text content"),
        ("tck-input-required-1a2b3c4d TCK prerequisite task creation", INPUT_REQUIRED_TEXT),
    ],
)
def test_the_longest_prefix_of_the_id_picks_the_answer(prompt: str, text: str) -> None:
    assert plan_reply(body(prompt), tck=True).text == text


def test_ids_of_no_scenario_and_other_prompts_are_answered_as_usual() -> None:
    assert scenario_for("tck-infer-ctx-1a2b3c4d Follow-up message") is None
    assert plan_reply(body("tck-infer-ctx-1a2b3c4d Follow-up message"), tck=True).text.startswith("echo #1: ")
    assert plan_reply(body("@ask hello"), tck=True).text == "Do you want me to go ahead? (echo #1: hello)"
    assert message_ids("the TCK said tck and atck-x, then tck-stream-001-ab") == ["tck-stream-001-ab"]


def test_without_tck_mode_an_id_is_free_text() -> None:
    assert plan_reply(body("tck-complete-task-1 hi")).text == "echo #1: tck-complete-task-1 hi"


def test_the_input_required_answer_is_a_question_for_iris() -> None:
    assert Detector().detect(INPUT_REQUIRED_TEXT) is not None
    assert all(Detector().detect(s.text) is None for p, s in SCENARIOS.items() if p != "tck-input-required")


def test_the_long_running_task_outlasts_twice_the_tck_streaming_timeout() -> None:
    reply = plan_reply(body("test-resubscribe-message-id-42 go"), tck=True)
    assert reply.chunks is not None and reply.chunks * reply.delay_s >= 2 * 2.0


def test_a_tool_follow_up_is_not_a_scenario() -> None:
    request = body("tck-complete-task-1 hi")
    request["messages"] += [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]
    assert plan_reply(request, tck=True).text == "tool Bash said: ok"
