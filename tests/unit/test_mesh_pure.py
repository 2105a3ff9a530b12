"""The mesh's pure parts: reachability of a home, the remote caller's rights, a
cancelled tell told apart from one that irisd's stop interrupts, the wire's shapes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgspec
import pytest

from iris_common.mesh import STALE_S, HomeEntry, reachable, unreachable_words
from irisd.caller import Caller
from irisd.mesh.wire import (
    ENCODER,
    INBOUND,
    CancelMsg,
    RemoteTellMsg,
    chain_in,
    invalid_tell,
    path_out,
    read,
    speaker,
    tell_subject,
)
from irisd.tell.machine import TellMachine
from protocol.errors import PermissionDeniedError
from protocol.messages import CancelTell, ChainRef, Decide, GetTell, ListTeams, Tell


def test_a_home_is_reachable_while_its_heartbeat_is_fresh() -> None:
    seen = time.mktime((2026, 11, 25, 14, 2, 11, 0, 0, -1))
    home = HomeEntry(name="ws-2", seen_at=seen)
    assert reachable(home, seen + STALE_S - 0.1)
    assert not reachable(home, seen + STALE_S)
    assert unreachable_words("ws-2", home, seen + 60) == "home irisd `ws-2` unreachable since 14:02:11"
    stopped = HomeEntry(name="ws-2", seen_at=seen, up=False)
    assert unreachable_words("ws-2", stopped, seen + 1) == "home irisd `ws-2` stopped since 14:02:11"
    assert unreachable_words("ws-3", None, seen) == "home irisd `ws-3` unreachable (it never joined the mesh)"


def test_a_remote_caller_speaks_as_team_at_irisd_and_only_tells_reads_and_cancels() -> None:
    caller = Caller.remote("ws-1", "frontend")
    told = caller.apply(Tell(to_team="backend", message="hi", from_team="backend", parent_pair="x->y"))
    assert isinstance(told, Tell) and told.from_team == "frontend@ws-1" and told.parent_pair == ""
    assert Caller.remote("ws-1", None).team == "external@ws-1"
    assert caller.apply(GetTell(tell_id="t")) == GetTell(tell_id="t")
    assert caller.apply(CancelTell(tell_id="t")) == CancelTell(tell_id="t")
    for request in (ListTeams(), Decide(approval_id="a", allow=True)):
        with pytest.raises(PermissionDeniedError, match="may only tell, read and cancel tells"):
            caller.apply(request)


def test_a_cancelled_tell_is_told_apart_from_an_interrupted_one() -> None:
    queued = TellMachine(response_timeout_s=10, caller_timeout_ms=0, now=0.0)
    queued.cancel(1.0)
    assert queued.cancelled and queued.is_final
    running = TellMachine(response_timeout_s=10, caller_timeout_ms=0, now=0.0)
    running.remote_started(1.0)
    running.cancel(2.0)
    assert running.cancelled and not running.is_final  # still winding down
    stopped = TellMachine(response_timeout_s=10, caller_timeout_ms=0, now=0.0)
    stopped.interrupt(1.0, "irisd stopped")
    assert not stopped.cancelled


def test_the_wire_round_trips_and_the_subject_names_the_speaker() -> None:
    tell = RemoteTellMsg(id="t-1", from_team=None, to_team="api", message="hi", hops=1, path=["web@ws-1"])
    assert INBOUND.decode(ENCODER.encode(tell)) == tell
    assert INBOUND.decode(ENCODER.encode(CancelMsg(id="t-1"))) == CancelMsg(id="t-1")
    assert speaker(tell_subject("ws-2", "ws-1")) == "ws-1"


def test_the_home_refuses_a_tell_with_negative_hops_or_an_endless_path_and_says_so() -> None:
    fine = ENCODER.encode(RemoteTellMsg(id="t-1", from_team="web", to_team="api", message="hi", hops=1))
    assert invalid_tell(fine) is None and invalid_tell(b"not json") is None and invalid_tell(b'{"a": 1}') is None
    negative = fine.replace(b'"hops":1', b'"hops":-1')
    assert INBOUND.decode(fine) and read(INBOUND, negative) is None
    assert invalid_tell(negative) == ("t-1", "Expected `int` >= 0 - at `$.hops`")
    endless = ENCODER.encode(RemoteTellMsg(id="t-2", from_team="web", to_team="api", message="hi"))
    endless = endless[:-1] + b',"path":' + ENCODER.encode(["web@ws-1"] * 65) + b"}"
    assert invalid_tell(endless) == ("t-2", "Expected `array` of length <= 64 - at `$.path`")


def test_a_mesh_tell_carries_the_teams_waiting_in_its_chain_each_named_by_its_irisd() -> None:
    assert path_out(("external", "web", "api"), "web", "ws-1") == ["external@ws-1", "web@ws-1"]
    assert path_out(("docs@ws-2", "web", "api"), "web", "ws-1") == ["docs@ws-2", "web@ws-1"]
    assert path_out((), None, "ws-1") == ["external@ws-1"]
    assert path_out([f"t{i}" for i in range(70)], "t68", "ws-1") == [f"t{i}@ws-1" for i in range(5, 69)]  # the last 64
    tell = RemoteTellMsg(id="t-1", from_team="web", to_team="api", message="hi", chain_id="c", hops=2,
                         path=["api@ws-2", "web@ws-1"])
    # On its home ws-2, its own teams go by their names there: api is found waiting (a loop).
    assert chain_in(tell, "ws-2") == ChainRef(chain_id="c", hops=2, path=["api", "web@ws-1"])


def test_doctor_judges_the_mesh() -> None:
    from iris_cli.doctor import judge_mesh
    from iris_common.mesh import TeamEntry
    from iris_common.mesh_probe import MeshView

    now = 1_000_000.0
    fine = MeshView(server="127.0.0.1:4222", jetstream=True, read_at=now,
                    homes={"ws-1": HomeEntry(name="ws-1", seen_at=now - 1, server_at=now - 1, pid=7, host="a")},
                    teams={"api": TeamEntry(name="api", home="ws-1")})
    check = judge_mesh("ws-1", fine, 7)
    assert check.verdict == "ok" and "1 irisd(s) up, 1 team(s)" in check.detail
    taken = judge_mesh("ws-1", fine, 8)
    assert taken.verdict == "fail" and "another irisd (a, pid 7) is on the mesh as `ws-1`" in taken.detail
    fine.homes["ws-2"] = HomeEntry(name="ws-2", seen_at=now + 4, server_at=now - 1)
    skewed = judge_mesh("ws-1", fine, 7)
    assert skewed.verdict == "warn" and "ws-2 +5.0 s" in skewed.detail
    down = judge_mesh("ws-1", MeshView(problem="cannot reach the NATS server at nats://x:4222: refused"), None)
    assert down.verdict == "fail" and "start the NATS server" in down.fix
    no_js = judge_mesh("ws-1", MeshView(problem="the NATS server at x has no JetStream; start it with -js"), None)
    assert "nats-server -js" in no_js.fix


def test_a_home_finds_the_local_tell_it_made_before_it_died(tmp_path: Path) -> None:
    from irisd.mesh import records
    from irisd.store import tells
    from irisd.store.db import open_database
    from protocol.messages import TellInfo

    db = open_database(tmp_path / "iris.db")
    records.ensure(db)
    records.receive(db, "r-1", "ws-1", 100.0)
    assert records.get(db, "r-1") == records.Inbound("r-1", "ws-1", None, False, 100.0)
    assert records.find_submitted(db, "web@ws-1", "api", "hi", 100.0) is None  # never submitted: run it
    tells.insert(db, TellInfo(id="old", from_team="web@ws-1", to_team="api", message="hi", status="completed",
                              created_at=50.0))
    tells.insert(db, TellInfo(id="new", from_team="web@ws-1", to_team="api", message="hi", status="queued",
                              created_at=100.2))
    assert records.find_submitted(db, "web@ws-1", "api", "hi", 100.0) == "new"  # adopted, not run again
    records.submitted(db, "r-1", "new")
    assert records.find_submitted(db, "web@ws-1", "api", "hi", 100.0) is None  # one local tell per remote one
    assert records.unreplied(db)[0].local_id == "new"


def test_iris_mesh_status_shows_a_clock_a_hair_behind_as_plus_zero() -> None:
    from iris_cli.mesh_cmd import home_line

    now = 1_000_000.0
    home = HomeEntry(name="ws-1", seen_at=now - 1.01, server_at=now - 1.0, host="vm", teams=["api"])
    line = home_line(home, now)
    assert "(vm, clock +0.0 s): api" in line and line.split()[:3] == ["irisd", "ws-1", "up"], line
    ahead = HomeEntry(name="ws-1", seen_at=now + 4.0, server_at=now - 1.0, host="vm")
    assert "clock +5.0 s" in home_line(ahead, now)


def test_an_irisd_name_held_by_another_irisd_that_is_up_is_refused() -> None:
    from irisd.mesh.directory import Process, name_taken

    now = 1_000_000.0
    holder = HomeEntry(name="ws-1", seen_at=now - 1, host="a", pid=7, pid_namespace="pid:[1]")
    b9, a9, a7 = Process(host="b", pid=9), Process(host="a", pid=9), Process(host="a", pid=7)
    a9, a7 = (msgspec.structs.replace(p, pid_namespace="pid:[1]") for p in (a9, a7))
    said = name_taken(holder, here=b9, now=now, alive=lambda pid: True)
    assert said.startswith("irisd name `ws-1` is taken by another irisd (host a, pid 7, last seen 1 s ago)")
    assert "give it its own settings.mesh.name" in said
    assert name_taken(holder, here=a9, now=now, alive=lambda pid: True)  # same host, holder alive
    assert name_taken(holder, here=a9, now=now, alive=lambda pid: False) == ""  # it died: free
    assert name_taken(holder, here=a7, now=now, alive=lambda pid: True) == ""  # this irisd again
    # A container of the same hostname: pid 7 is not looked up in another PID namespace.
    other_namespace = msgspec.structs.replace(a9, pid_namespace="pid:[2]")
    assert name_taken(holder, here=other_namespace, now=now, alive=lambda pid: False)
    stopped = HomeEntry(name="ws-1", seen_at=now - 1, host="a", pid=7, up=False)
    assert name_taken(stopped, here=b9, now=now, alive=lambda pid: True) == ""  # a clean stop
    stale = HomeEntry(name="ws-1", seen_at=now - STALE_S - 1, host="a", pid=7)
    assert name_taken(stale, here=b9, now=now, alive=lambda pid: True) == ""  # killed, gone stale


def test_a_mesh_message_nested_too_deep_is_not_irises_not_a_crash() -> None:
    # A RecursionError would end the home's consumer and the message come back forever.
    from irisd.mesh.wire import FINAL, LIVE, read

    deep = b'{"id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert read(INBOUND, deep) is None and read(LIVE, deep) is None and read(FINAL, deep) is None
    assert read(INBOUND, b"{nope") is None and read(INBOUND, b'{"kind": "nope"}') is None
    assert read(INBOUND, ENCODER.encode(CancelMsg(id="t-1"))) == CancelMsg(id="t-1")
    # A string that is not UTF-8 raised UnicodeDecodeError, which restarted the consumer.
    for id_ in (b"\xff", rb"\ud800"):
        bad = ENCODER.encode(CancelMsg(id="t-1")).replace(b"t-1", id_)
        assert read(INBOUND, bad) is None


def test_a_mesh_sender_is_refused_by_an_irisd_on_no_mesh(tmp_path: Path) -> None:
    from iris_common.config import parse_config
    from irisd.tell.service import check_sender
    from protocol.errors import InvalidRequestError, UnknownTeamError

    teams = f"teams:\n  alpha:\n    path: {tmp_path}\n"
    alone = parse_config(teams.encode(), source="test")
    mesh = "settings:\n  mesh:\n    url: nats://127.0.0.1:4222\n    name: ws-1\n"
    meshed = parse_config(f"{mesh}{teams}".encode(), source="test")
    for config in (alone, meshed):
        check_sender(config, None)
        check_sender(config, "alpha")
        check_sender(config, "a2a:crm")
        with pytest.raises(UnknownTeamError):
            check_sender(config, "alpah")
    check_sender(meshed, "backend@ws-2")
    with pytest.raises(InvalidRequestError, match="this irisd is on no mesh"):
        check_sender(alone, "backend@typo")
    check_sender(alone, "backend@ws-2", sending=False)  # a filter over tells of a past mesh


def test_a_claim_counts_only_under_its_homes_own_key_and_the_earliest_holds_a_name() -> None:
    from iris_common.mesh import TeamEntry, claim_key, read_claim, team_homes

    def value(name: str, home: str) -> bytes:
        return msgspec.json.encode(TeamEntry(name=name, home=home, description=f"{name} of {home}"))

    assert claim_key("ws5", "my.team") == "ws5.my.team"
    assert read_claim("ws5.my.team", value("my.team", "ws5")) == TeamEntry(
        name="my.team", home="ws5", description="my.team of ws5")
    # a key of another irisd's name (written with its credentials) cannot claim for ws5, nor
    # the old one-key-per-team layout, nor something that is not a claim
    assert read_claim("ws6.books", value("books", "ws5")) is None
    assert read_claim("ws5.books", value("other", "ws5")) is None
    assert read_claim("books", value("books", "ws5")) is None
    assert read_claim("ws5.books", b"not json") is None
    assert read_claim("ws5.books", b'{"name": "books"}') is None
    ws5, ws6 = TeamEntry(name="books", home="ws5"), TeamEntry(name="books", home="ws6")
    ops = TeamEntry(name="ops", home="ws6")
    homes = team_homes({"ws6.books": (9, ws6), "ws5.books": (4, ws5), "ws6.ops": (10, ops)})
    assert homes == {"books": ws5, "ops": ops}  # the later claim of books does not take it over
    assert team_homes({"ws6.books": (9, ws6)}) == {"books": ws6}  # once ws5 let it go


def test_a_pid_that_names_no_process_is_not_alive() -> None:
    """A heartbeat's pid (another irisd's word): 0 and -1 would be process groups to
    ``kill``, a number past 2**31 overflows it; none is a process."""
    from irisd.mesh.directory import _alive

    assert _alive(os.getpid())
    for pid in (0, -1, 2**31, 10**30):
        assert not _alive(pid)
