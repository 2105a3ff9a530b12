"""Benchmark 17: what the ``iris mcp`` front end adds to a warm tell, over irisd's socket.

Side by side, round by round (each side first in turn), against one irisd whose children
are echoes in its own process (``sim_irisd.py``: a warm tell costs irisd's path only, so
the front end's own milliseconds are not lost in a claude turn's noise):

* socket:          the tell from a protocol client on a kept connection (what the shim
                   itself sends), announced (one event naming the tell) and streamed
                   (``stream=True``: what the shim asks for when its client gave a progress
                   token or can show a form); each MCP side is compared with the socket
                   tell of its kind, so that irisd's streaming is not counted as the front
                   end's;
* raw JSON-RPC:    ``team_tell`` through an ``iris mcp`` subprocess from a client that
                   writes and reads JSON-RPC lines and does nothing else (protocol
                   2026-07-28, the envelope in each request's ``_meta``): the shim's own
                   cost, the fair measure of it. Without and with a progress token,
                   declaring no capabilities; and as Claude Code 2.1.330 calls (a progress
                   token, form elicitation declared: the tell streams, so that a wait for
                   an approval can become a form);
* MCP SDK client:  the same through the MCP SDK's ``Client`` over stdio (no elicitation
                   declared), without and with a progress token (``progress_callback``):
                   this adds the SDK client's own JSON-RPC, the caller's cost;
* Shim in process: the tools' own code (``iris_mcp.shim.Shim`` on the shim's
                   ``DaemonLink``) called in this process, no MCP: what Iris's Python adds,
                   apart from the MCP transport and the second process.

Each ``iris mcp`` process's CPU per call and irisd's CPU per tell (from /proc) are reported
too: the load does not stretch them as it stretches wall time. Targets (issue 30): the MCP
front end at most +2 ms over the socket; a call with a progress token (it streams) at most
+2 ms over the announced socket tell, so irisd's streaming counts there.

With ``--baseline REV`` a second irisd and its ``iris mcp`` processes, all of that revision
(a scratch git worktree on PYTHONPATH), take the same calls in the same rounds.

Run: .venv/bin/python bench/bench_mcp_front.py [--rounds N] [--baseline REV]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import trio
from _common import REPO, SimIris, describe, header, machine, median, ms, thread_cpu_seconds
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from harness import claude_binary
from iris_cli.aclient import ConnectionPool
from iris_cli.mcp_stdio import DaemonLink
from iris_mcp.shim import Shim
from protocol.framing import LineFramer
from protocol.messages import Event, Tell, TellReply

# What Claude Code 2.1.330 puts in each request's _meta (claude-cli-facts.md, 2026-11-27), with
# a progress token in every tool call: it can show a form, so iris mcp has irisd stream the tell
# (its phases say when the tell waits for an approval the person may answer in that form).
CLAUDE_CODE_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.330"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}, "roots": {}},
}
# A client of the same era that declares nothing (as the SDK's client in this bench).
PLAIN_META = {**CLAUDE_CODE_META, "io.modelcontextprotocol/clientCapabilities": {}}

TARGET_S = 0.002


@contextlib.contextmanager
def checkout(revision: str) -> Iterator[Path]:
    """``revision`` of this repository in a scratch git worktree."""
    folder = Path(tempfile.mkdtemp(prefix="iris-bench-rev-"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(folder), revision], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(folder)], check=False)


class Side:
    """One way of sending the tell, its samples, the notifications it got, and the
    ``iris mcp`` process it goes through (``pid``), if any."""

    def __init__(
        self, label: str, send: Callable[[str], Awaitable[int]], pid: int | None = None, *, streams: bool = False
    ) -> None:
        self.label = label
        self.send = send
        self.pid = pid
        self.streams = streams  # iris mcp asks irisd to stream this tell (a progress token, or forms)
        self.samples: list[float] = []
        self.notifications: list[int] = []
        self.cpu = 0.0  # this process's CPU time over the rounds
        self.shim_cpu = 0.0  # the iris mcp process's
        self.irisd: SimIris | None = None  # the irisd it tells
        self.irisd_cpu = 0.0  # that irisd's CPU time for its tells (IrisdCpu)


class RawClient:
    """JSON-RPC lines to an ``iris mcp`` and back, nothing more (a client's least cost)."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.stdin, self.stdout = process.stdin, process.stdout
        self.framer = LineFramer()
        self.next_id = 0

    async def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The result, and how many notifications came before it."""
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        await self.stdin.send_all(msgspec.json.encode(line) + b"\n")
        notifications = 0
        while True:
            while (frame := self.framer.next_frame()) is None:
                data = await self.stdout.receive_some()
                if not data:
                    raise RuntimeError("iris mcp closed its stdout")
                self.framer.receive_data(data)
            message = msgspec.json.decode(frame)
            if message.get("id") == self.next_id:
                assert "result" in message, message
                return message["result"], notifications
            notifications += 1


@contextlib.asynccontextmanager
async def raw_client(env: dict[str, str], cwd: Path, errlog: Any) -> AsyncIterator[RawClient]:
    """An ``iris mcp`` on pipes, opened as Claude Code opens it (server/discover, tools/list)."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "iris_cli", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=errlog, env=env, cwd=str(cwd),
    )
    client = RawClient(process)
    try:
        await client.request("server/discover", {"_meta": CLAUDE_CODE_META})
        await client.request("tools/list", {"_meta": CLAUDE_CODE_META})
        yield client
    finally:
        await client.stdin.aclose()
        with trio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()


def raw_sides(name: str, client: RawClient) -> list[Side]:
    tokens = itertools.count()

    async def tell(text: str, token: bool, meta: dict[str, Any]) -> int:
        meta = {**meta, "progressToken": next(tokens)} if token else meta
        params = {"name": "team_tell", "arguments": {"toTeam": "alpha", "message": text}, "_meta": meta}
        result, seen = await client.request("tools/call", params)
        assert not result.get("isError"), result
        return seen

    pid = client.process.pid
    return [Side(f"{name}, raw JSON-RPC, no token", partial(tell, token=False, meta=PLAIN_META), pid),
            Side(f"{name}, raw JSON-RPC, progress token", partial(tell, token=True, meta=PLAIN_META), pid,
                 streams=True),
            Side(f"{name}, raw JSON-RPC as Claude Code", partial(tell, token=True, meta=CLAUDE_CODE_META), pid,
                 streams=True)]


def mcp_sides(name: str, client: Client, pid: int | None) -> list[Side]:
    async def plain(text: str) -> int:
        result = await client.call_tool("team_tell", {"toTeam": "alpha", "message": text})
        assert not result.is_error, result
        return 0

    async def with_progress(text: str) -> int:
        seen = 0

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            nonlocal seen
            seen += 1

        arguments = {"toTeam": "alpha", "message": text}
        result = await client.call_tool("team_tell", arguments, progress_callback=on_progress)
        assert not result.is_error, result
        return seen

    return [Side(f"{name}, SDK client, no token", plain, pid),
            Side(f"{name}, SDK client, progress token", with_progress, pid, streams=True)]


def children() -> set[int]:
    """This process's children (the SDK's stdio client starts its ``iris mcp`` as one)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.add(int(stat.parent.name))
    return found


class IrisdCpu:
    """An irisd's CPU time, each share given to the side whose tell it did: from the start
    of that side's call to the start of the next call to the same irisd (so what irisd does
    after a reply, writing the tell's end, counts too, while the other irisd is told)."""

    def __init__(self, iris: SimIris) -> None:
        assert iris.process is not None
        self.pid = iris.process.pid
        self.last: Side | None = None
        self.at = thread_cpu_seconds(self.pid)

    def mark(self, side: Side | None) -> None:
        """``side``'s call starts now (None: the rounds are over)."""
        now = thread_cpu_seconds(self.pid)
        if self.last is not None:
            self.last.irisd_cpu += now - self.at
        self.last, self.at = side, now


class Group:
    """One irisd (this checkout's, or the baseline's with its ``iris mcp``) and its sides."""

    def __init__(self, name: str, iris: SimIris) -> None:
        self.name = name
        self.iris = iris
        self.pool = ConnectionPool(iris.socket, "bench")
        self.sides: list[Side] = []

    async def via_socket(self, text: str, stream: bool) -> int:
        seen = 0

        async def on_event(event: Event) -> None:
            nonlocal seen
            seen += 1

        tell = Tell(to_team="alpha", message=text, timeout_ms=50_000, stream=stream, announce=not stream)
        reply = await self.pool.request(tell, on_event)
        assert isinstance(reply, TellReply) and reply.status == "completed", reply
        return seen


def sim_iris(root: Path, old_code: Path | None = None) -> SimIris:
    """An irisd with echo children: this checkout's, or (``old_code``) a revision's."""
    root.mkdir(parents=True)
    iris = SimIris(root, model_url="http://127.0.0.1:9", claude=claude_binary())
    if old_code is not None:
        iris.env["PYTHONPATH"] = str(old_code)  # ahead of the editable install of this checkout
        iris.script = old_code / "bench" / "sim_irisd.py"
    iris.add_team("alpha")
    iris.start()
    return iris


async def run(rounds: int, baseline: str | None, old_code: Path | None) -> None:
    root = Path(tempfile.mkdtemp(prefix="iris-bench-mcp-"))
    groups: list[Group] = []
    try:
        groups.append(Group("", sim_iris(root / "this")))
        if old_code is not None:
            groups.append(Group(f"at {baseline}", sim_iris(root / "old", old_code)))
        ours = groups[0]
        shim = Shim(DaemonLink(ours.iris.socket, autostart=False), cwd=str(ours.iris.root), env={})

        async def via_shim(text: str) -> int:
            output = await shim.call("team_tell", {"toTeam": "alpha", "message": text}, None)
            assert not output.is_error, output.text
            return 0

        async with contextlib.AsyncExitStack() as stack:
            errlog = stack.enter_context((root / "shim.log").open("a"))
            for group in groups:
                prefix = f"{group.name}: " if group.name else ""
                group.sides += [Side(f"{prefix}socket: protocol client", partial(group.via_socket, stream=False)),
                                Side(f"{prefix}socket, streamed (stream=True)", partial(group.via_socket, stream=True),
                                     streams=True)]
                if group is ours:
                    group.sides.append(Side("Shim in process, no MCP", via_shim))
                name = group.name or "iris mcp"
                raw = await stack.enter_async_context(raw_client(group.iris.env, group.iris.root, errlog))
                group.sides += raw_sides(name, raw)
                params = StdioServerParameters(
                    command=sys.executable, args=["-m", "iris_cli", "mcp"], env=group.iris.env,
                    cwd=str(group.iris.root),
                )
                before = children()
                client = await stack.enter_async_context(Client(stdio_client(params, errlog=errlog)))
                group.sides += mcp_sides(name, client, max(children() - before, default=None))
                for side in group.sides:
                    side.irisd = group.iris
            sides = [side for group in groups for side in group.sides]
            irisd_cpus = {group.iris: IrisdCpu(group.iris) for group in groups}
            for warm in range(3):  # the pair, the kept connections, the shims' lazy imports
                for side in sides:
                    await side.send(f"warm {warm}")
            for round_ in range(rounds):
                shift = round_ % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    assert side.irisd is not None
                    shim_cpu = thread_cpu_seconds(side.pid) if side.pid is not None else 0.0
                    irisd_cpus[side.irisd].mark(side)
                    start, cpu = trio.current_time(), time.process_time()
                    seen = await side.send(f"question {round_}")
                    side.samples.append(trio.current_time() - start)
                    side.cpu += time.process_time() - cpu
                    if side.pid is not None:
                        side.shim_cpu += thread_cpu_seconds(side.pid) - shim_cpu
                    side.notifications.append(seen)
                print(".", end="", flush=True, file=sys.stderr)
            await trio.sleep(0.5)  # the last tells' writes after their replies
            for cpus in irisd_cpus.values():
                cpus.mark(None)
        for group in groups:
            await group.pool.aclose()
    finally:
        for group in groups:
            if group.iris.process is not None:
                group.iris.stop(timeout=60)
            shutil.rmtree(group.iris.socket.parent, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
    print(file=sys.stderr)
    print("irisd streaming a tell (what iris mcp asks for with a progress token, or a client that takes forms), "
          "over the same tell announced; irisd's CPU per tell, what it writes after the reply included "
          "(/proc/PID/task/*/schedstat):")
    for group in groups:
        announced, streamed = group.sides[:2]
        over = median(streamed.samples) - median(announced.samples)
        print(f"  {streamed.label:<44} {median(streamed.samples) / median(announced.samples):5.2f}x "
              f"({'+' if over >= 0 else '-'}{ms(abs(over))}; {median([float(n) for n in streamed.notifications]):g} "
              f"events, against 1); irisd's CPU {ms(streamed.irisd_cpu / rounds)} against "
              f"{ms(announced.irisd_cpu / rounds)}")
    print("ratios (median time / median of the same tell from a protocol client on a kept connection to the same "
          "irisd, streamed or not as iris mcp asks irisd; in brackets: over the tell not streamed, target +2 ms):")
    for group in groups:
        announced_s, streamed_s = (median(side.samples) for side in group.sides[:2])
        for side in group.sides[2:]:
            base = streamed_s if side.streams else announced_s
            over = median(side.samples) - base
            verdict = "met" if over <= TARGET_S else "MISSED"
            extra = ("+" if over >= 0 else "-") + ms(abs(over))
            whole = median(side.samples) - announced_s
            print(f"  {side.label:<44} {median(side.samples) / base:5.2f}x   ({extra}; target +2 ms: {verdict})"
                  f"   [{'+' if whole >= 0 else '-'}{ms(abs(whole))}: "
                  f"{'met' if whole <= TARGET_S else 'MISSED'}]")
    print("this process's CPU per call (what the Shim's own Python adds, without MCP):")
    for side in (ours.sides[0], ours.sides[2]):
        print(f"  {side.label:<44} {ms(side.cpu / rounds)}")
    print("the iris mcp process's CPU per call (/proc/PID/task/*/schedstat):")
    for side in sides:
        if side.pid is not None:
            print(f"  {side.label:<44} {ms(side.shim_cpu / rounds)}")
    print("progress notifications per tell:")
    for side in sides:
        if side.pid is not None:
            print(f"  {side.label:<44} median {median([float(n) for n in side.notifications]):g}, "
                  f"max {max(side.notifications)}")
    print("absolute:")
    for side in sides:
        print(describe(side.label, side.samples))
    print(f"load average {os.getloadavg()[0]:.1f} at the end; {machine()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--baseline", help="also an irisd and 'iris mcp' of this git revision, e.g. main")
    args = parser.parse_args()
    header("17. the MCP front end: team_tell through 'iris mcp' vs the same tell on the socket")
    with checkout(args.baseline) if args.baseline else contextlib.nullcontext() as old_code:
        trio.run(run, args.rounds, args.baseline, old_code)


if __name__ == "__main__":
    main()
