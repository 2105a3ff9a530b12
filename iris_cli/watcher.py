"""What ``iris tell`` shows while it waits: the answer as it streams, a status line
naming the tell's phase (on a terminal), and the commands that decide an approval."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING

from protocol.core_messages import TellNotice, TellPhase, TellPhaseEvent, TellState, TellText
from protocol.phases import awaited_approval, describe

if TYPE_CHECKING:
    from iris_cli.live import StatusLine
    from protocol.messages import Event


def approval_hint(phase: TellPhase, approval_id: str) -> str:
    """The lines that tell a person how to decide the approval a tell waits for (its own,
    or the one of the tell ahead of it in the queue)."""
    from iris_cli.text import decide_line  # here: most tells wait for no approval

    return f"{describe(phase)}\n{decide_line(approval_id)}"


class TellWatcher:
    """Takes the events of one streaming tell. ``stream_text``: write the answer to
    stdout as it comes; ``status_line``: keep a live status line on stderr; ``hints``:
    print approval commands and API retries on stderr even without a terminal."""

    EVENTS = (TellText, TellState, TellPhaseEvent, TellNotice)  # what irisd streams to a tell's caller

    def __init__(self, *, stream_text: bool, status_line: bool, hints: bool) -> None:
        self.tell_id = ""
        self.streamed = False
        self.stream_text = stream_text
        self.hints = hints
        self._shown_approvals: set[str] = set()
        self._status: StatusLine | None = None
        if status_line:  # on a terminal only: its thread and redraws
            from iris_cli.live import StatusLine

            self._status = StatusLine(sys.stderr, sys.stdout)
        self._line_open = False

    @property
    def line_open(self) -> bool:
        """The answer written so far does not end with a newline."""
        return self._status.line_open if self._status is not None else self._line_open

    def __enter__(self) -> TellWatcher:
        if self._status is not None:
            self._status.__enter__()
            self._status.set("sending")
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._status is not None:
            self._status.__exit__(et, ev, tb)

    def on_event(self, event: Event) -> None:
        match event:
            case TellText(tell_id=tell_id, text=text):
                self.tell_id = self.tell_id or tell_id
                if self.stream_text:
                    self.streamed = True
                    if self._status is not None:
                        self._status.write(text)
                    else:
                        sys.stdout.write(text)
                        sys.stdout.flush()
                        self._line_open = not text.endswith("\n")
            case TellState(tell_id=tell_id):
                self.tell_id = self.tell_id or tell_id
            case TellPhaseEvent(tell_id=tell_id, phase=phase):
                self.tell_id = self.tell_id or tell_id
                self._on_phase(phase)
            case TellNotice(tell_id=tell_id, text=text):
                self.tell_id = self.tell_id or tell_id
                self._note(text)

    def _on_phase(self, phase: TellPhase) -> None:
        if self._status is not None:
            self._status.set(describe(phase))
        approval = awaited_approval(phase)
        if approval is not None and approval.approval_id not in self._shown_approvals:
            self._shown_approvals.add(approval.approval_id)
            self._note(approval_hint(phase, approval.approval_id))

    def _note(self, text: str) -> None:
        if self._status is not None:
            self._status.note(text)
        elif self.hints:
            if self._line_open:
                sys.stdout.write("\n")
                sys.stdout.flush()
                self._line_open = False
            print(text, file=sys.stderr, flush=True)
