"""``iris cache read``: a tell's steps (protocol/transcript.py, the one reading of claude's
stream-json lines) as a conversation for people: what was asked, the text the model wrote,
each tool call with its input and the first lines of its result, approvals, API retries
and the outcome. ``iris cache read --raw`` prints the lines."""

from __future__ import annotations

from dataclasses import dataclass

from protocol.messages import TellInfo, TranscriptEntry
from protocol.transcript import Step, steps

RESULT_LINES = 6  # of a tool's result


@dataclass(frozen=True)
class Shown:
    kind: str  # "text", "tool", "result", "approval", "notice", "start", "end", "other"
    text: str


def conversation(entries: list[TranscriptEntry], tell: TellInfo | None = None) -> list[Shown]:
    """``tell``: the tell the lines are of (its end says what the tell cost, as the ledger)."""
    return shown(steps(entries, tell))


def shown(found: list[Step]) -> list[Shown]:
    """Steps as the conversation shows them (irisd reads them: ``ReadTranscript(steps=True)``)."""
    return [Shown(step.kind, _words(step)) for step in found]


def _words(step: Step) -> str:
    if step.kind != "result":
        return step.text
    lines = step.text.splitlines() or [""]
    more = f"\n… ({len(lines) - RESULT_LINES} more lines)" if len(lines) > RESULT_LINES else ""
    label = "error" if step.is_error else "result"
    return f"{label}: " + "\n".join(lines[:RESULT_LINES]) + more
