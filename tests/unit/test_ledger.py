"""The cost ledger: a row per tell with figures, summed per team, pair, chain and day."""

from __future__ import annotations

import datetime
from pathlib import Path

import apsw
import pytest

from irisd.store import ledger, tells
from irisd.store.db import open_database
from protocol.messages import TellInfo


@pytest.fixture
def db(tmp_path: Path) -> apsw.Connection:
    return open_database(tmp_path / "iris.db")


def finished(tell_id: str, *, to_team: str, from_team: str | None = None, cost: float, at: float,
             chain: str = "", inp: int = 10, out: int = 2) -> TellInfo:
    return TellInfo(id=tell_id, from_team=from_team, to_team=to_team, message="m", status="completed",
                    created_at=at - 1, started_at=at - 1, finished_at=at, cost_usd=cost, chain_id=chain or tell_id,
                    input_tokens=inp, output_tokens=out, cache_read_tokens=1, cache_creation_tokens=0,
                    num_turns=1, duration_ms=100)


def record(db: apsw.Connection, info: TellInfo) -> None:
    tells.insert(db, info)
    tells.update(db, info)


def test_a_finished_tell_with_a_cost_is_in_the_ledger_and_stays_after_clearing(db: apsw.Connection) -> None:
    record(db, finished("t1", to_team="alpha", cost=0.25, at=100.0))
    running = TellInfo(id="t2", from_team=None, to_team="alpha", message="m", status="running", created_at=1.0)
    tells.insert(db, running)
    tells.update(db, running)  # no cost yet: no row
    assert ledger.spent_since(db, 0.0) == 0.25
    tells.clear_finished(db, "alpha", None)
    assert ledger.spent_since(db, 0.0) == 0.25  # money spent is not forgotten
    stored = tells.get(db, "t2")
    assert stored is not None and stored.cost_usd is None


def test_summaries_by_team_pair_chain_and_day(db: apsw.Connection) -> None:
    day1 = datetime.datetime(2026, 11, 21, 12).astimezone().timestamp()
    day2 = datetime.datetime(2026, 11, 22, 12).astimezone().timestamp()
    record(db, finished("t1", to_team="alpha", cost=0.5, at=day1, chain="c1"))
    record(db, finished("t2", to_team="beta", from_team="alpha", cost=0.25, at=day2, chain="c1"))
    record(db, finished("t3", to_team="alpha", from_team="beta", cost=1.0, at=day2))

    rows, total = ledger.summary(db, "team", 0.0)
    assert [(r.key, r.tells, r.cost_usd) for r in rows] == [("alpha", 2, 1.5), ("beta", 1, 0.25)]
    assert (total.tells, total.cost_usd, total.input_tokens, total.output_tokens) == (3, 1.75, 30, 6)
    assert (total.cache_read_tokens, total.num_turns, total.duration_ms) == (3, 3, 300)

    rows, _ = ledger.summary(db, "pair", 0.0)
    assert [r.key for r in rows] == ["beta->alpha", "external->alpha", "alpha->beta"]
    rows, _ = ledger.summary(db, "chain", 0.0)
    assert {r.key: r.cost_usd for r in rows} == {"c1": 0.75, "t3": 1.0}
    rows, _ = ledger.summary(db, "day", 0.0)
    assert [(r.key, r.cost_usd) for r in rows] == [("2026-11-22", 1.25), ("2026-11-21", 0.5)]

    rows, total = ledger.summary(db, "team", day2 - 3600)
    assert total.cost_usd == 1.25
    _, beta_total = ledger.summary(db, "team", 0.0, "beta")
    assert beta_total.tells == 2  # to beta, and from beta
    assert ledger.spent_since(db, day2 - 3600, "alpha") == 1.0
    assert ledger.chain_spent(db, "c1") == 0.75
    assert ledger.by_pair(db) == {(None, "alpha", ""): 0.5, ("alpha", "beta", ""): 0.25, ("beta", "alpha", ""): 1.0}
    assert ledger.prune(db, day2 - 3600) == 1


def test_a_threads_spending_is_its_own_row_and_counts_in_its_pairs_budgets(db: apsw.Connection) -> None:
    import msgspec

    record(db, finished("t1", to_team="alpha", from_team="beta", cost=0.5, at=100.0))
    threaded = msgspec.structs.replace(finished("t2", to_team="alpha", from_team="beta", cost=0.25, at=100.0),
                                       thread="auth")
    record(db, threaded)
    rows, total = ledger.summary(db, "pair", 0.0)
    assert {r.key: r.cost_usd for r in rows} == {"beta->alpha": 0.5, "beta->alpha#auth": 0.25}
    assert total.cost_usd == 0.75
    assert ledger.pair_spent(db, "beta", "alpha") == 0.5
    assert ledger.pair_spent(db, "beta", "alpha", thread="auth") == 0.25
    assert ledger.by_pair(db) == {("beta", "alpha", ""): 0.5, ("beta", "alpha", "auth"): 0.25}
    # The daily budgets (all teams, the team's) count every thread of the team.
    assert ledger.spent_since(db, 0.0) == 0.75 and ledger.spent_since(db, 0.0, "alpha") == 0.75
    (row,), _ = ledger.summary(db, "team", 0.0)
    assert (row.key, row.tells) == ("alpha", 2)
