"""The A2A TCK's scenarios as answers: the scripted model's ``tck`` mode. Pure, stdlib only.

The official A2A conformance suite (``third_party/a2a-tck``) tells the agent under test
what to do through the ``messageId`` of each message it sends: ``tck-complete-task-…``,
``tck-input-required-…``, ... (its ``scenarios/*.feature``). A team answers with the
real ``claude`` talking to this model, and the model sees only the text of the tell, so
the test team's ``a2aPrompt`` (README "A2A") puts each A2A message's ``messageId`` in the
text, and in ``tck`` mode the model finds that id anywhere in the prompt and answers as the
scenario says.

Only what the model can truthfully do is scripted here: the text of the answer, how
long it takes, and whether it ends by asking the caller something. Whatever A2A state
follows is Iris's own doing: an answer that asks is a question for the caller, which
Iris's A2A face reports as ``TASK_STATE_INPUT_REQUIRED``; any other answer completes
the task with that text as its artifact, read as a file or data when it is only a fenced
block naming a file, a JSON block or a file reference (the face's ``answer_parts``).
Scenarios that need more (a bare Message instead of a Task, a rejection) get a text answer
that says what was asked, and the TCK's check for them fails: README "A2A" lists them.
A prompt without a TCK id, or with one of no scenario (``tck-infer-ctx-…``), is
answered as usual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Scenario:
    """How to answer a message of one ``messageId`` prefix."""

    text: str
    chunks: int | None = None  # deltas (None: one per word)
    delay_s: float = 0.0  # before each delta


# The question the detector (irisd/questions/detector.py) takes for one: "Do you want me to ...?"
INPUT_REQUIRED_TEXT = "Do you want me to go ahead with the TCK task?"

# test-resubscribe-message-id: "the task MUST remain active for at least 2 x TCK_STREAMING_TIMEOUT"
# (2 s by default): five deltas a second apart.
RESUBSCRIBE_DELTAS = 5
RESUBSCRIBE_DELAY_S = 1.0

# A file, a file by URL and data, in the forms Iris's A2A face reads an answer as those parts
# (an answer that is only such a block or reference; README "A2A").
_FILE = "```output.txt\nGenerated file content\n```"

# Prefix -> answer; the longest matching prefix wins (tck-artifact-file-url over tck-artifact-file).
SCENARIOS: dict[str, Scenario] = {
    # scenarios/core_operations.feature
    "tck-complete-task": Scenario("Hello from TCK"),
    "tck-artifact-text": Scenario("Generated text content"),
    "tck-artifact-file": Scenario(_FILE),
    "tck-artifact-file-url": Scenario("(file output.txt at https://example.com/output.txt)"),
    "tck-artifact-data": Scenario('```json\n{"key": "value", "count": 42}\n```'),
    "tck-message-response": Scenario("Direct message response"),
    "tck-input-required": Scenario(INPUT_REQUIRED_TEXT),
    "tck-reject-task": Scenario("A rejection was asked for; the model cannot refuse on Iris's behalf."),
    # scenarios/streaming.feature
    "tck-stream-001": Scenario("Stream hello from TCK"),
    "tck-stream-002": Scenario("Stream message-only response"),
    "tck-stream-003": Scenario("Stream task lifecycle"),
    "tck-stream-ordering-001": Scenario("Ordered output"),
    "tck-stream-artifact-text": Scenario("Streamed text content"),
    "tck-stream-artifact-file": Scenario(_FILE),
    "tck-stream-artifact-chunked": Scenario("chunk-1 chunk-2", chunks=2),
    "test-resubscribe-message-id": Scenario(
        "Long-running TCK task done", chunks=RESUBSCRIBE_DELTAS, delay_s=RESUBSCRIBE_DELAY_S
    ),
}

# A TCK messageId: the prefix, then the TCK's own suffix (a session id, a uuid).
_MESSAGE_ID = re.compile(r"(?<![\w-])(tck-[\w-]+|test-resubscribe-message-id[\w-]*)")
_BY_LENGTH = sorted(SCENARIOS, key=len, reverse=True)


def message_ids(prompt: str) -> list[str]:
    """The TCK message ids in ``prompt``, in order."""
    return [m.group(1) for m in _MESSAGE_ID.finditer(prompt)]


def scenario_for(prompt: str) -> Scenario | None:
    """The answer the first TCK message id in ``prompt`` asks for, if it names a scenario."""
    for message_id in message_ids(prompt):
        for prefix in _BY_LENGTH:
            if message_id == prefix or message_id.startswith(prefix + "-"):
                return SCENARIOS[prefix]
        return None  # a TCK id of no scenario: an ordinary message
    return None
