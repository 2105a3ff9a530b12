"""How full a pair's conversation is, and when Iris compacts it. Pure: no trio, no I/O.

How it works
------------
Every ``result`` line claude prints carries ``usage``, the tokens of the turn it ends:
what the model read (``input_tokens``), read from the prompt cache
(``cache_read_input_tokens``) and wrote to it (``cache_creation_input_tokens``). Their sum
is the conversation's size as the model last saw it. The window it must fit in is, in
order: ``settings.sessions.contextWindow`` when set, what claude says of the model
(``modelUsage.<model>.contextWindow``), the table below by the model's name, else 200k.

When a tell ends above ``compactAt`` percent of the window, Iris runs ``/compact`` on
the pair before its next tell (``compaction_due``): the process machine puts the
compaction first in the pair's queue, so it never runs while a tell does, and a tell
that arrives meanwhile waits for it. A compaction never asks for another one.

claude also compacts by itself when the context is nearly full, in the middle of a
turn: it prints ``{"type": "system", "subtype": "status", "status": "compacting"}``,
then ``{"type": "system", "subtype": "compact_boundary", "compact_metadata":
{"trigger": "auto" | "manual", "pre_tokens": N, "post_tokens": M, ...}}``
(measured with 2.1.330 for /compact: tests/unit/recorded/child_resumed_compact.jsonl; an
automatic one tried on a short conversation printed ``status: null, compact_result: failed,
compact_error: too_few_groups`` and no boundary).
``boundary`` reads that line, whoever started the compaction.
"""

from __future__ import annotations

from typing import Any

import msgspec

DEFAULT_CONTEXT_WINDOW = 200_000
DEFAULT_COMPACT_AT = 70  # percent of the context window

# Context windows by model name prefix, for a claude that does not say (the first match wins).
KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-opus-5", 1_000_000),
    ("claude-sonnet-5", 1_000_000),
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3", 200_000),
)


class ContextSize(msgspec.Struct, frozen=True):
    """The conversation's tokens as the model last read them, against its window."""

    tokens: int
    window: int

    @property
    def percent(self) -> float:
        return 100.0 * self.tokens / self.window if self.window > 0 else 0.0


class Boundary(msgspec.Struct, frozen=True):
    """A compaction claude reports (``compact_boundary``): who started it and the tokens."""

    trigger: str  # "auto" (claude, near a full context), "manual" (a /compact)
    pre_tokens: int | None
    post_tokens: int | None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def window_for(model: str) -> int:
    """The context window of ``model`` from the table (the default if it is not there)."""
    name = model.removeprefix("anthropic/").lower()
    if name.endswith("[1m]"):
        return 1_000_000
    for prefix, window in KNOWN_WINDOWS:
        if name.startswith(prefix):
            return window
    return DEFAULT_CONTEXT_WINDOW


def context_size(usage: Any, model_usage: Any, *, override: int | None = None) -> ContextSize | None:
    """The size a result line reports (None if its ``usage`` names no input tokens, or
    none at all: a local command's result).
    ``override``: settings.sessions.contextWindow."""
    if not isinstance(usage, dict):
        return None
    parts = [_whole(usage.get(key)) for key in ("input_tokens", "cache_read_input_tokens",
                                                  "cache_creation_input_tokens")]
    if parts[0] is None:
        return None
    tokens = sum(part or 0 for part in parts)
    if tokens == 0:  # a local command (/compact, /context): the model read nothing
        return None
    if override:
        return ContextSize(tokens, override)
    windows: list[int] = []
    if isinstance(model_usage, dict):
        for model, figures in model_usage.items():
            said = _whole(figures.get("contextWindow")) if isinstance(figures, dict) else None
            windows.append(said or window_for(str(model)))
    # Several models in one session (a side query on a small one): the largest is the conversation's.
    return ContextSize(tokens, max(windows, default=DEFAULT_CONTEXT_WINDOW))


def compaction_due(size: ContextSize | None, compact_at: int, *, kind: str) -> bool:
    """Whether a tell of ``kind`` that ended at ``size`` calls for a /compact before the
    next one. ``compact_at`` 0 turns it off; a compaction never asks for another."""
    if size is None or compact_at <= 0 or kind == "compaction":
        return False
    return size.percent >= compact_at


def boundary(subtype: str, metadata: Any) -> Boundary | None:
    """The compaction a ``system`` line reports (None for any other line)."""
    if subtype != "compact_boundary":
        return None
    meta = metadata if isinstance(metadata, dict) else {}
    trigger = meta.get("trigger")
    return Boundary(
        trigger=trigger if isinstance(trigger, str) and trigger else "auto",
        pre_tokens=_whole(meta.get("pre_tokens")),
        post_tokens=_whole(meta.get("post_tokens")),
    )
