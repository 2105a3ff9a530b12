"""How a pair's conversation is named for people and in a nested tell's ``parent_pair``:
``from->to`` for the pair's default thread, ``from->to#thread`` for a thread of its own
("external" when there is no sending team). Pure: no I/O."""

from __future__ import annotations

PairKey = tuple[str | None, str, str]  # (from_team or None, to_team, thread); thread "" is the default


def pair_label(from_team: str | None, to_team: str, thread: str = "") -> str:
    return f"{from_team or 'external'}->{to_team}" + (f"#{thread}" if thread else "")


def parse_pair_label(label: str) -> PairKey:
    """The key ``pair_label`` wrote (a label without ``#`` is the default thread)."""
    from_name, _, rest = label.partition("->")
    to_name, _, thread = rest.partition("#")
    return (None if from_name in ("", "external") else from_name, to_name, thread)
