"""A pair's conversation in words, the same for every front end (the CLI, the MCP tools).
Pure: no I/O."""

from __future__ import annotations

from protocol.messages import SessionInfo


def context(session: SessionInfo) -> str:
    """How full the conversation is: "41.2k of 200k (21%)", or "-" before its first answer."""
    tokens, window = session.context_tokens, session.context_window
    if tokens is None or not window:
        return "-"
    return f"{_short(tokens)} of {_short(window)} ({round(100 * tokens / window)}%)"


def fill(session: SessionInfo) -> str:
    """The short form, for a table: "21%", or "-" before its first answer."""
    tokens, window = session.context_tokens, session.context_window
    return "-" if tokens is None or not window else f"{round(100 * tokens / window)}%"


TRIGGERS = {"iris": "by Iris", "manual": "by /compact", "auto": "by claude, its context nearly full"}


def compactions(session: SessionInfo) -> str:
    """Its compactions: "2, last by Iris: 150k -> 3.1k tokens after 40 messages", or "none"."""
    if not session.compactions:
        return "none"
    last = TRIGGERS.get(session.compact_trigger, session.compact_trigger or "")
    before, after = session.compact_tokens_before, session.compact_tokens_after
    tokens = f"{_short(before) if before is not None else '?'} -> {_short(after) if after is not None else '?'} tokens"
    messages = (f" after {session.compact_messages_before} messages"
                if session.compact_messages_before is not None else "")
    since = (f"; {session.message_count - session.compact_messages_before} messages since"
             if session.compact_messages_before is not None else "")
    return f"{session.compactions}, last {last}: {tokens}{messages}{since}"


def _short(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.3g}M"
    if tokens >= 1000:
        return f"{tokens / 1000:.3g}k"
    return str(tokens)
