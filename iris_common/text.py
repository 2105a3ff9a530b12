"""Plain text and data shared by the CLI's output, the MCP tools' and irisd's (no rich, no I/O)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from protocol.pairs import pair_label

if TYPE_CHECKING:
    from protocol.messages import TellReply


def pair_name(from_team: str | None, to_team: str, thread: str = "") -> str:
    """As irisd writes it (and the wire's parent_pair): ``from->to``, ``from->to#thread``."""
    return pair_label(from_team, to_team, thread)


def short(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text``, an ellipsis first if cut."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def tell_data(reply: TellReply) -> dict[str, Any]:
    """A tell for scripts and models: its fields, ``status`` as the caller sees it
    (``in_progress`` while it runs) and ``tell_status`` as stored (queued, running, ...)."""
    data: dict[str, Any] = msgspec.to_builtins(reply.tell)
    return {**data, "status": reply.status, "tell_status": reply.tell.status}
