"""Benchmark 6: irisd's memory with ten pairs and a large stored history, and the time
to read a 10,000-message history back.

In one run:

* irisd's resident memory (VmRSS from /proc) idle, with ten warm pairs (ten claude
  children that each served a tell; their own memory is shown for context), and after
  serving a 10,000-message transcript (VmHWM: the peak while the reads ran, reset before
  them); the transcript is read in pages, as every face of Iris reads it;
* the time to read a tell's transcript through the protocol (``ReadTranscript``):
  10,000 messages vs 100, and a ``Report`` of the 1,000 latest of 10,000 tells.

The large history is written straight into the database with irisd's own queries
(claude would take hours to print that much through the scripted model).

Run: .venv/bin/python bench/bench_memory.py [--messages N]
"""

from __future__ import annotations

import argparse
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import apsw
from _common import (
    describe,
    header,
    median,
    read_transcript,
    request,
    reset_peak,
    rss_kib,
    running_iris,
    status,
    timed,
)

from harness import Iris
from irisd.store import tells
from protocol.messages import Report, ReportReply, Tell, TellInfo

PAIRS = 10
TEAMS = [f"team{n}" for n in range(PAIRS)]
LINE_BYTES = 1024  # a typical stream_event / assistant line from claude is 0.3-2 KB
REPEATS = 15
BATCH = 20  # lines a write: what a long turn prints in half a second, or so
LINES_MANY_TO_A_ROW = 14  # the schema version since which a row holds many lines (irisd/store/lines.py)


def fake_line(n: int) -> bytes:
    text = f"word{n} " * ((LINE_BYTES - 120) // 8)
    return (
        b'{"type":"stream_event","event":{"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"' + text.encode() + b'"}}}'
    )


def store_history(iris: Iris, messages: int, tells_count: int) -> dict[int, str]:
    """Tells with ``messages`` and 100 transcript lines, plus ``tells_count`` short tells
    of one pair; returns {lines: tell id}. Written through a second connection (WAL), as
    irisd writes them: a tell's lines BATCH at a time (a running tell's new lines go in
    every half second); into the database of code from before lines were stored many to a
    row (schema 13, a baseline's irisd), a row per line, as that code wrote them."""
    db = apsw.Connection(str(iris.home / "data" / "iris.db"))  # not migrated: it is irisd's
    db.setbusytimeout(5000)
    schema = db.execute("PRAGMA user_version").get
    now = time.time()
    ids = {}
    with db:
        for size in (messages, 100):
            tell_id = str(uuid.uuid4())
            ids[size] = tell_id
            tells.insert(db, _finished(tell_id, now))
            lines = [(now + n / 1000, "stream_event", fake_line(n)) for n in range(size)]
            for start in range(0, size, BATCH):
                if schema >= LINES_MANY_TO_A_ROW:
                    tells.append_messages(db, tell_id, lines[start:start + BATCH])
                else:
                    db.executemany("INSERT INTO tell_messages (tell_id, at, type, raw) VALUES (?, ?, ?, ?)",
                                   [(tell_id, *line) for line in lines[start:start + BATCH]])
        for n in range(tells_count):
            tells.insert(db, _finished(str(uuid.uuid4()), now - n))
    db.close()
    return ids


def _finished(tell_id: str, at: float) -> TellInfo:
    return TellInfo(
        id=tell_id, from_team=None, to_team="team0", message="what is in the logs?",
        status="completed", text="a long answer", created_at=at, finished_at=at,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    args = parser.parse_args()
    header("6. irisd memory with 10 pairs and a large history; reading a 10k-message history")
    with running_iris(TEAMS, maxProcesses=PAIRS) as iris:
        assert iris.process is not None
        pid = iris.process.pid
        idle = rss_kib(pid)["VmRSS"]
        with ThreadPoolExecutor(PAIRS) as pool:  # a first tell each: claude fully loaded
            list(pool.map(lambda team: request(iris, Tell(to_team=team, message="hello")), TEAMS))
        children = [p.pid for p in status(iris).processes if p.pid]
        assert len(children) == PAIRS
        with_pairs = rss_kib(pid)["VmRSS"]
        children_kib = sum(rss_kib(child)["VmRSS"] for child in children)

        ids = store_history(iris, args.messages, args.messages)
        reset_peak(pid)
        before_read = rss_kib(pid)["VmRSS"]
        large: list[float] = []
        small: list[float] = []
        report: list[float] = []
        for _ in range(REPEATS):
            large.append(timed(_read, iris, ids[args.messages], args.messages))
            small.append(timed(_read, iris, ids[100], 100))
            report.append(timed(_report, iris))
        after = rss_kib(pid)
    mib = 1024
    print("ratios:")
    print(f"  irisd RSS with {PAIRS} warm pairs / idle                {with_pairs / idle:5.2f}x")
    print(f"  irisd RSS after serving the {args.messages}-message history / before   "
          f"{after['VmRSS'] / before_read:5.2f}x (peak {after['VmHWM'] / before_read:.2f}x)")
    print(f"  reading {args.messages} messages / reading 100            "
          f"{median(large) / median(small):5.1f}x (for {args.messages // 100}x the messages)")
    per_child = children_kib / PAIRS
    print(f"  irisd's RSS / one claude child's (mean)               {with_pairs / per_child:5.2f}x")
    print("absolute:")
    print(f"  irisd RSS idle {idle / mib:.1f} MiB; with {PAIRS} pairs {with_pairs / mib:.1f} MiB; "
          f"after the large history {after['VmRSS'] / mib:.1f} MiB (peak {after['VmHWM'] / mib:.1f} MiB)")
    print(f"  the {PAIRS} claude children together: {children_kib / mib:.0f} MiB RSS")
    print(describe(f"ReadTranscript, {args.messages} messages of ~1 KiB", large))
    print(describe("ReadTranscript, 100 messages", small))
    print(describe(f"Report, latest 1000 of {args.messages} tells", report))


def _read(iris: Iris, tell_id: str, expected: int) -> None:
    reply, _ = read_transcript(iris, tell_id)
    assert len(reply.entries) == expected


def _report(iris: Iris) -> None:
    reply = request(iris, Report(to_team="team0", limit=1000))
    assert isinstance(reply, ReportReply) and len(reply.tells) == 1000


if __name__ == "__main__":
    main()
