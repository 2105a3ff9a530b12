"""Money and the day it is counted in: how a sum of USD is shown, when "today" began."""

from __future__ import annotations


def usd(amount: float) -> str:
    """Money for people: cents for large sums, more digits for small ones."""
    return f"${amount:,.2f}" if amount >= 1 else f"${amount:.6f}".rstrip("0").rstrip(".")


def day_start(now: float) -> float:
    """The local midnight that began the day of ``now`` (epoch seconds)."""
    import datetime  # here: 'iris tell' shows money and never needs the day (nor datetime)

    moment = datetime.datetime.fromtimestamp(now).astimezone()
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight.timestamp()
