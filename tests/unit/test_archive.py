"""Which conversations a sweep archives, and whose files it deletes (``irisd/pool/archive.py``)."""

from __future__ import annotations

from irisd.pool.archive import DAY_S, Aging, Due, due

NOW = 1_800_000_000.0
A, B, C = (None, "alpha", ""), ("beta", "alpha", ""), (None, "gamma", "")


def test_a_conversation_unused_for_archive_after_days_is_archived_not_a_second_sooner() -> None:
    old = Aging(A, "active", last_used_at=NOW - 90 * DAY_S)
    recent = Aging(B, "active", last_used_at=NOW - 90 * DAY_S + 1)
    pending = Aging(C, "compact_pending", last_used_at=NOW - 400 * DAY_S)
    assert due([old, recent, pending], NOW, archive_after_days=90, delete_after_days=None) == Due(archive=(A, C))


def test_a_pair_with_work_is_never_archived() -> None:
    old = Aging(A, "active", last_used_at=NOW - 365 * DAY_S)
    assert due([old], NOW, archive_after_days=90, delete_after_days=None, busy=frozenset({A})) == Due()


def test_files_are_deleted_only_with_the_setting_and_once() -> None:
    archived = Aging(A, "archived", last_used_at=NOW - 200 * DAY_S, archived_at=NOW - 30 * DAY_S)
    assert due([archived], NOW, archive_after_days=90, delete_after_days=None) == Due()  # never without it
    assert due([archived], NOW, archive_after_days=90, delete_after_days=31) == Due()
    assert due([archived], NOW, archive_after_days=90, delete_after_days=30) == Due(delete_files=(A,))
    gone = Aging(A, "archived", last_used_at=0.0, archived_at=0.0, files_deleted=True)
    assert due([gone], NOW, archive_after_days=90, delete_after_days=1) == Due()


def test_an_archived_conversation_is_not_archived_again() -> None:
    archived = Aging(A, "archived", last_used_at=NOW - 500 * DAY_S, archived_at=NOW - DAY_S)
    assert due([archived], NOW, archive_after_days=90, delete_after_days=None) == Due()
