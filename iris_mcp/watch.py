"""What a streaming tell has shown so far, and the progress message for the MCP client.

Pure: each event in, the progress message it makes (if any) out; when it goes out is
``iris_mcp.progress``'s to decide.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iris_common.text import tail
from iris_mcp.asking import ASK_PERSON
from iris_mcp.progress import Said
from iris_mcp.render import ToolOutput, ask_person
from protocol.messages import (
    FINAL_TELL_STATUSES,
    Event,
    TellNotice,
    TellPhase,
    TellPhaseEvent,
    TellState,
    TellText,
)
from protocol.phases import awaited_approval, describe

MAX_PROGRESS_CHARS = 4_000  # the tail of the answer so far that a progress message shows


@dataclass
class TellWatch:
    """What a streaming tell has shown so far: its id, status, phase and text."""

    to_team: str
    tell_id: str | None = None
    status: str = ""
    parts: list[str] = field(default_factory=list)
    notice: str = ""  # the latest TellNotice (claude retrying the API), shown until text comes
    phase: str = ""  # what the tell waits for, in words (irisd's TellPhase)
    waiting: TellPhase | None = None  # the approval the tell waits for now, if any

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def feed(self, event: Event) -> Said | None:
        """Take one pushed event; the progress message it makes, or None (nothing new to
        say). Urgent: the tell now waits for a person (its approval, or the tell ahead's)
        or behind other tells."""
        urgent = False
        match event:
            case TellText(tell_id=tell_id, text=text):
                self.tell_id = tell_id
                self.parts.append(text)
            case TellState(tell_id=tell_id, status=status):
                self.tell_id = tell_id
                if status != "awaiting_approval":
                    self.waiting = None
                if status == self.status:
                    return None
                self.status = status
                if status in FINAL_TELL_STATUSES:
                    return None  # the result itself follows at once
                urgent = status == "awaiting_approval"
            case TellNotice(tell_id=tell_id, text=text):
                self.tell_id = tell_id
                self.notice = text
            case TellPhaseEvent(tell_id=tell_id, phase=phase):
                self.tell_id = tell_id
                self.waiting = phase if phase.name == "awaiting_approval" and phase.approval_id else None
                said = describe(phase) + ask_person(phase)
                if said == self.phase or (self.parts and phase.name == "answering"):
                    return None
                self.phase = said
                self.notice = ""
                urgent = phase.name == "queued" or awaited_approval(phase) is not None
            case _:
                return None  # an event this shim does not know yet: not worth a notification
        return Said(self.message(), urgent)

    def message(self) -> str:
        if self.parts and ASK_PERSON not in self.phase:
            return tail(self.text, MAX_PROGRESS_CHARS)
        if self.notice:
            return self.notice
        if self.phase:
            return f"{self.to_team}: {self.phase}"
        match self.status:
            case "queued":
                return f"queued for {self.to_team}"
            case "running":
                return f"{self.to_team} is working on it"
        return f"{self.to_team}: {self.status}"

    def next_step(self) -> str:
        if self.tell_id is None:
            return f'see team_report {{"team": "{self.to_team}"}}'
        return f'fetch it with team_result {{"tellId": "{self.tell_id}"}}'

    def lost_message(self) -> str:
        return (
            f"the connection to irisd broke while the tell to {self.to_team} was under way; it may "
            f"have been delivered and answered, so it was not sent again: {self.next_step()}"
        )


def render_unanswered(watch: TellWatch, waited_s: float) -> ToolOutput:
    """irisd missed the tell's own deadline (it should never): say what is known."""
    text = f"irisd did not answer within {waited_s:g} s; the tell may still be running: {watch.next_step()}."
    if watch.parts:
        text += f"\nThe answer so far:\n\n{watch.text}"
    data = {"id": watch.tell_id, "status": "in_progress", "text": watch.text, "to_team": watch.to_team}
    return ToolOutput(text, data, is_error=True)
