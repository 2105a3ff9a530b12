"""What a claude process has spent, and what one turn of it cost. Pure: no trio, no I/O.

How it works
------------
claude's result lines carry running totals: ``total_cost_usd`` and ``modelUsage``
(tokens and cost per model) count everything since the SESSION began, not since the
process started. A process started with ``--resume`` begins from the total claude stored
when the session's last process exited: the last ``cost-state`` line of the session's
transcript (written on a clean exit and on SIGTERM, not after SIGKILL). ``usage`` is the
last turn's own tokens, but it leaves out what the turn did outside the turn proper
(``/compact`` reports 0 tokens for a real model call).

So a turn's share is the difference it made: its result's running total minus the
running total before it (the previous result of the same process, or for the first
result, what the process started from). Money and tokens come from the same running
total, so one tell shows one figure everywhere. Measured with claude 2.1.330: see
tests/unit/test_spend.py for the lines as claude wrote them.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

COST_STATE = "cost-state"  # the type of the line claude appends to a session's transcript on exit
_MARK = b'"cost-state"'  # on the line of a cost-state (a line that only mentions it is parsed, then skipped)

_TOKENS = (  # Spent's field <- modelUsage's key, summed over the models
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_tokens", "cacheReadInputTokens"),
    ("cache_creation_tokens", "cacheCreationInputTokens"),
)
_USAGE = (  # Spent's field <- usage's key (a turn's own tokens)
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_read_tokens", "cache_read_input_tokens"),
    ("cache_creation_tokens", "cache_creation_input_tokens"),
)


class Spent(msgspec.Struct, frozen=True):
    """Money and tokens: a running total, or one turn's share of one."""

    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0

    def plus(self, other: Spent) -> Spent:
        return Spent(
            cost_usd=self.cost_usd + other.cost_usd,
            **{name: getattr(self, name) + getattr(other, name) for name, _ in _TOKENS},
        )

    def since(self, earlier: Spent) -> Spent:
        """What was added after ``earlier`` (never negative: a total that went down
        restarted from less, and the whole of it is new)."""
        if self.cost_usd < earlier.cost_usd:
            return self
        return Spent(
            cost_usd=self.cost_usd - earlier.cost_usd,
            **{name: max(getattr(self, name) - getattr(earlier, name), 0) for name, _ in _TOKENS},
        )


def _whole(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _money(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _model_tokens(model_usage: Any) -> dict[str, int] | None:
    if not isinstance(model_usage, dict) or not model_usage:
        return None
    models = [m for m in model_usage.values() if isinstance(m, dict)]
    return {name: sum(_whole(m.get(key)) for m in models) for name, key in _TOKENS}


def running_total(total_cost_usd: Any, model_usage: Any) -> Spent | None:
    """A result line's running total (None when it names no cost)."""
    cost = _money(total_cost_usd)
    if cost is None:
        return None
    return Spent(cost_usd=cost, **(_model_tokens(model_usage) or {}))


def turn_share(total: Spent, before: Spent, model_usage: Any, usage: Any) -> Spent:
    """A result's share: ``total`` (its running total) minus ``before``. Without
    ``modelUsage`` the tokens cannot be differenced: the turn's own ``usage`` then."""
    share = total.since(before)
    if _model_tokens(model_usage) is not None or not isinstance(usage, dict):
        return share
    return Spent(cost_usd=share.cost_usd, **{name: _whole(usage.get(key)) for name, key in _USAGE})


def stored_total(transcript_tail: bytes) -> Spent | None:
    """The running total a resumed claude starts from: the last ``cost-state`` line in
    (the tail of) its session's transcript; None if there is none."""
    end = len(transcript_tail)
    while (at := transcript_tail.rfind(_MARK, 0, end)) >= 0:
        start = transcript_tail.rfind(b"\n", 0, at) + 1
        stop = transcript_tail.find(b"\n", at)
        line = transcript_tail[start : stop if stop >= 0 else len(transcript_tail)]
        end = start
        try:
            state = json.loads(line)
        except ValueError:
            continue  # the tail's cut first line, or a torn write
        if isinstance(state, dict) and state.get("type") == COST_STATE:
            total = running_total(state.get("totalCostUSD"), state.get("modelUsage"))
            if total is not None:
                return total
    return None
