"""Session analytics (irisd/store/stats.py): each pair's figures from the ledger and the store."""

from __future__ import annotations

import datetime
import math
from pathlib import Path
from typing import Literal

import apsw
import msgspec
import pytest

from irisd.store import ledger, sessions, stats
from irisd.store.db import open_database
from protocol.messages import AskReply, TellInfo


@pytest.fixture
def db(tmp_path: Path) -> apsw.Connection:
    return open_database(tmp_path / "iris.db")


def spent(tell_id: str, to_team: str, from_team: str | None = None, *, at: float, ms: int, cost: float = 0.5,
          kind: Literal["tell", "compaction"] = "tell") -> TellInfo:
    return TellInfo(id=tell_id, from_team=from_team, to_team=to_team, message="m", status="completed",
                    created_at=at - 1, finished_at=at, cost_usd=cost, input_tokens=100, output_tokens=10,
                    cache_read_tokens=7, cache_creation_tokens=3, num_turns=1, duration_ms=ms, kind=kind)


def nearest_rank_p95(values: list[int]) -> int:
    ordered = sorted(values)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


def test_each_pairs_figures_match_its_ledger_rows(db: apsw.Connection) -> None:
    times = [100 * n for n in range(1, 21)]  # 20 tells: p95 is the 19th time
    for n, ms in enumerate(reversed(times)):
        ledger.record(db, spent(f"a{n}", "beta", "alpha", at=1000.0 + n, ms=ms))
    ledger.record(db, spent("c1", "beta", "alpha", at=2000.0, ms=9000, cost=0.25, kind="compaction"))
    ledger.record(db, spent("b1", "beta", at=1500.0, ms=700, cost=2.0))
    ledger.record_ask(db, "ask-1", 1600.0, AskReply(text="x", cost_usd=9.0, duration_ms=50))  # no pair
    sessions.get_or_create(db, "alpha", "beta", 900.0)
    sessions.record_turn(db, "alpha", "beta", 1000.0)
    sessions.record_compaction(db, "alpha", "beta", 2000.0, "iris", 1000, 100)

    alpha, external = stats.pair_stats(db)

    assert (alpha.from_team, alpha.to_team, alpha.tells) == ("alpha", "beta", 20)
    assert (alpha.messages, alpha.compactions) == (1, 1)
    assert alpha.cost_usd == pytest.approx(20 * 0.5 + 0.25) and alpha.maintenance_usd == 0.25
    assert (alpha.input_tokens, alpha.output_tokens, alpha.cache_read_tokens, alpha.cache_creation_tokens) == (
        2100, 210, 147, 63)
    assert alpha.mean_tell_ms == sum(times) / 20  # the compaction's time is not a tell's
    assert alpha.p95_tell_ms == nearest_rank_p95(times) == 1900
    assert alpha.first_used_at == 1000.0 - 2.0  # the first tell's finish minus its 2000 ms
    assert alpha.last_used_at == 2000.0 and alpha.lifetime_s == 1002.0
    assert alpha.status == "active"
    assert (external.from_team, external.tells, external.p95_tell_ms, external.status) == (None, 1, 700, "")
    # the same sums as 'iris costs --by pair'
    rows, _ = ledger.summary(db, "pair", 0.0)
    by_key = {r.key: r for r in rows}
    assert by_key["alpha->beta"].cost_usd == alpha.cost_usd
    assert by_key["alpha->beta"].input_tokens == alpha.input_tokens


def test_p95_by_nearest_rank_for_small_counts(db: apsw.Connection) -> None:
    for count in (1, 2, 3, 19, 21):
        db.execute("DELETE FROM ledger")
        values = [(n * 37) % 101 + n for n in range(count)]
        for n, ms in enumerate(values):
            ledger.record(db, spent(f"t{n}", "beta", at=10.0 + n, ms=ms))
        (pair,) = stats.pair_stats(db)
        assert pair.p95_tell_ms == nearest_rank_p95(values), count


def test_the_most_active_pair_comes_first_and_since_and_team_narrow(db: apsw.Connection) -> None:
    ledger.record(db, spent("x1", "gamma", "beta", at=100.0, ms=10, cost=5.0))
    for n in range(3):
        ledger.record(db, spent(f"y{n}", "beta", "alpha", at=200.0 + n, ms=10))
    sessions.get_or_create(db, "delta", "alpha", 50.0)  # a conversation with no figures yet
    assert [(s.from_team, s.to_team, s.tells) for s in stats.pair_stats(db)] == [
        ("alpha", "beta", 3), ("beta", "gamma", 1), ("delta", "alpha", 0)]
    assert [s.to_team for s in stats.pair_stats(db, since=150.0)] == ["beta"]
    assert [(s.from_team, s.to_team) for s in stats.pair_stats(db, team="gamma")] == [("beta", "gamma")]


def test_tells_and_cost_per_pair_and_day(db: apsw.Connection) -> None:
    day1 = datetime.datetime(2026, 11, 21, 12).astimezone().timestamp()
    day2 = datetime.datetime(2026, 11, 22, 12).astimezone().timestamp()
    ledger.record(db, spent("t1", "beta", at=day1, ms=10, cost=0.5))
    ledger.record(db, spent("t2", "beta", at=day1 + 60, ms=10, cost=0.25))
    ledger.record(db, spent("t3", "beta", at=day2, ms=10, cost=1.0))
    ledger.record(db, spent("c1", "beta", at=day2 + 60, ms=10, cost=0.125, kind="compaction"))
    ledger.record(db, spent("t4", "gamma", "beta", at=day2, ms=10, cost=2.0))
    days = [msgspec.structs.astuple(d) for d in stats.daily(db)]
    assert days == [
        (None, "beta", "2026-11-21", 2, 0.75),
        (None, "beta", "2026-11-22", 1, 1.125),  # a compaction costs, but is no tell
        ("beta", "gamma", "2026-11-22", 1, 2.0),
    ]
    pairs, by_day = stats.report(db, since=day2)
    assert sum(d.tells for d in by_day) == sum(p.tells for p in pairs) == 2
