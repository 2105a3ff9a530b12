"""Which pairs' conversations are due to be archived, or their files deleted. Pure: no
trio, no I/O; time is an argument.

How it works
------------
irisd sweeps the sessions now and then (``SWEEP_EVERY_S``, and once at start-up, so a
restart loses nothing: the dates are in the store). A conversation unused for
``settings.sessions.archiveAfterDays`` is archived: its claude is stopped, its status is
``archived``, its history (tells, transcripts, costs) stays, and the next tell restores
it. A pair with work (a tell running or queued) is never archived. Only with
``settings.sessions.deleteArchivedAfterDays`` set, an archived conversation's claude
transcript is deleted that long after it was archived (then a restore starts a new
conversation, as for any lost transcript).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from irisd.pool.policy import PairKey

DAY_S = 86_400.0
SWEEP_EVERY_S = 3_600.0  # how often irisd looks (an hour: the thresholds are days)


class Aging(msgspec.Struct, frozen=True):
    """What the sweep needs to know of one pair's conversation."""

    key: PairKey
    status: str
    last_used_at: float  # wall clock
    archived_at: float | None = None
    files_deleted: bool = False


class Due(msgspec.Struct, frozen=True):
    archive: tuple[PairKey, ...] = ()
    delete_files: tuple[PairKey, ...] = ()


def due(
    sessions: Iterable[Aging],
    now: float,
    *,
    archive_after_days: float,
    delete_after_days: float | None,
    busy: frozenset[PairKey] = frozenset(),
) -> Due:
    """What the sweep at ``now`` must do; ``busy``: pairs with a tell running or queued."""
    archive: list[PairKey] = []
    delete: list[PairKey] = []
    for session in sessions:
        if session.status == "archived":
            archived_at = session.archived_at if session.archived_at is not None else session.last_used_at
            if delete_after_days is not None and not session.files_deleted and (
                now - archived_at >= delete_after_days * DAY_S
            ):
                delete.append(session.key)
        elif session.key not in busy and now - session.last_used_at >= archive_after_days * DAY_S:
            archive.append(session.key)
    return Due(archive=tuple(archive), delete_files=tuple(delete))


def unused_for(days: float) -> str:
    """Why a sweep archived a pair, for people."""
    return f"unused for {days:g} days (settings.sessions.archiveAfterDays)"
