"""What a tell waits for. Pure: facts in, a phase out.

Before claude speaks (``before_start``): the tells ahead of it, a process slot, claude's
start, from the pair's process state. The approval desk knows ``awaiting_approval``.
Then (``after_line``) what claude's own lines say: it sent the turn to the model
(``init``), the model writes (text deltas), it runs a tool (an assistant message with a
``tool_use``), it sent the tool's result back (a ``user`` line), it retries the API
(``api_retry``).
"""

from __future__ import annotations

import msgspec

from irisd.claude.wire import AnyLine, AssistantLine, StreamEventLine, SystemLine, UserLine
from protocol.messages import TellPhase
from protocol.phases import tool_summary


def after_line(line: AnyLine, current: TellPhase | None) -> TellPhase | None:
    """The phase once ``line`` has been read; ``None`` when the line changes nothing."""
    match line:
        case SystemLine(subtype="api_retry"):
            return TellPhase(name="api_retry", detail=line.retry_notice() or "")
        case SystemLine(subtype="init"):
            return TellPhase(name="waiting_for_model")
        case SystemLine(subtype="status") if line.status == "compacting":
            return TellPhase(name="compacting", detail=CLAUDE_COMPACTS)
        case SystemLine(subtype="status") if current is not None and current.name == "compacting":
            return TellPhase(name="waiting_for_model")  # compacted (or it failed): the turn goes on
        case AssistantLine():
            uses = line.tool_uses()
            if uses:
                last = uses[-1]
                return TellPhase(name="running_tool", tool=last.name, detail=tool_summary(last.name, last.input))
            return None
        case UserLine():  # tool results went back: the model has the turn again
            return TellPhase(name="waiting_for_model")
        case StreamEventLine():
            if line.text_delta() and (current is None or current.name != "answering"):
                return TellPhase(name="answering")
            if current is not None and current.name == "api_retry" and line.event.type == "message_start":
                return TellPhase(name="waiting_for_model")  # the retry got through
            return None
    return None


CLAUDE_COMPACTS = "claude is compacting the conversation (its context was nearly full, or a /compact)"
IRIS_COMPACTS = "compacting the conversation (Iris, between tells: settings.sessions.compactAt)"
OWN_TURN = "claude is taking a turn of its own (a message from another Claude session); 'iris status' shows it"


def before_start(
    position: int, *, state: str, waiting_for_slot: int, head: TellPhase | None = None, head_id: str = "",
    own_turn: bool = False, compacting: bool = False,
) -> TellPhase | None:
    """What a queued tell waits for: ``position`` tells ahead of it (the running one
    counts; ``head``: what that one waits for, ``head_id``: its id), or, for the first, a
    turn the child took on its own (``own_turn``), a process slot (``waiting_for_slot``
    busy processes fill the pool) or claude's (re)start, by the pair's process ``state``.
    ``compacting``: the one ahead is a compaction Iris runs between tells (the next tell
    waits for it alone). ``None``: nothing to say (it is about to be handed to the idle child)."""
    if position == 0 and own_turn:
        return TellPhase(name="queued", detail=OWN_TURN)
    if position == 1 and compacting:
        return TellPhase(name="compacting", detail=IRIS_COMPACTS)
    if position > 0:
        if head is not None:  # only what the head waits for now, not what IT was queued behind
            head = msgspec.structs.replace(head, head=None, head_id="")
        return TellPhase(name="queued", ahead=position, head=head, head_id=head_id if head is not None else "")
    if state == "spawning" and waiting_for_slot > 0:
        return TellPhase(name="waiting_for_slot", ahead=waiting_for_slot)
    if state in ("spawning", "stopped", "terminating"):  # a (re)start is due
        return TellPhase(name="starting_claude")
    return None
