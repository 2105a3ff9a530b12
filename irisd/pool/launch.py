"""The launch of a pair's claude: the session probe, the launch spec, the child's token
and MCP config, and the child's start.

How it works
------------
The process machine decides WHEN and with which session (``RequestSlot``,
``ProbeSession``, ``Spawn``); the launcher decides HOW a command runs (here or over
ssh). ``Spawner.step`` does what the machine asked, as a task of the pair's nursery,
and returns what the pair's actor is told next: ``SlotGranted`` once the pool has a
place under maxProcesses; ``SessionProbed`` or ``SpawnFailed`` once the session is
probed; ``Spawned`` or ``SpawnFailed`` once the child is started. No step raises: a database that refuses, a claude
that cannot start or a bug becomes ``SpawnFailed`` with a reason, so that one pair's
failure never takes the others down.

Iris's tools reach the child three ways (``child_access``): over HTTP with a token of
its own (minted here, revoked the moment the child exits), through the stdio shim on
irisd's socket when irisd has no HTTP face, and, for a remote child, over HTTP through
its ssh connection's forward (the token then travels in the command's preamble, never
in argv).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Protocol

import msgspec
import trio

from iris_common.config import Team
from iris_common.paths import IrisPaths
from irisd.caller import Caller
from irisd.claude.command import child_system_prompt, iris_mcp_config
from irisd.claude.launcher import Child, IrisEndpoint, Launcher, LaunchSpec
from irisd.claude.spend import Spent
from irisd.events import EventHub, publish_change
from irisd.pool.pair_events import PairEvent, Reporting, SessionProbed, SlotGranted, SlotPool, Spawned, SpawnFailed
from irisd.pool.pair_inbox import Inbox
from irisd.pool.policy import PairKey
from irisd.pool.process_machine import ProbeSession, RequestSlot, SessionProbe, Spawn
from irisd.store import sessions
from irisd.store.facade import Store
from irisd.store.retry import PendingWrites
from irisd.tokens import Access, ChildGrant
from protocol.errors import IrisError

log = logging.getLogger("irisd.pair")


class TakenSpare(Protocol):
    """A spare claude a launch took (spares.py): started with ``session_id`` and ``grant``."""

    session_id: str
    process: Child
    grant: ChildGrant
    argv: list[str]

    def bind(self, inbox: trio.MemorySendChannel[PairEvent]) -> None: ...


class SpareSource(Protocol):
    def take(self, team: str) -> TakenSpare | None: ...


class ChildAccess(msgspec.Struct, frozen=True):
    """How one child reaches Iris's tools (see the module docstring)."""

    grant: ChildGrant | None  # its own token and MCP config file (None: irisd has no HTTP face)
    mcp_config: str  # a local child's --mcp-config
    endpoint: IrisEndpoint | None  # a remote child's URL and token


def child_access(access: Access | None, *, team: str, label: str, paths: IrisPaths, remote: bool) -> ChildAccess:
    grant = access.grant_child(team, label) if access is not None else None
    if remote:  # without an HTTP face a remote child cannot run the stdio shim: no Iris tools
        if access is None or grant is None:
            return ChildAccess(grant, "", None)
        return ChildAccess(grant, "", IrisEndpoint(url=f"{access.child_url}/mcp", token=grant.token))
    if grant is not None:  # the file holds the token, never argv
        return ChildAccess(grant, str(grant.path), None)
    return ChildAccess(None, iris_mcp_config(team=team, parent_pair=label, socket=str(paths.socket)), None)


def launch_spec(team: Team, child: ChildAccess, *, session_id: str, spawn: Spawn) -> LaunchSpec:
    return LaunchSpec(
        session_id=session_id,
        resume=spawn.resume,
        permissions=team.permissions,
        allowed_tools=team.allowed_tools,
        disallowed_tools=team.disallowed_tools,
        mcp_config=child.mcp_config,
        endpoint=child.endpoint,
        system_prompt=child_system_prompt(team.name),
        max_budget_usd=spawn.max_budget_usd,
    )


async def run_child(
    process: Child, grant: ChildGrant | None, *, task_status: trio.TaskStatus[Child] = trio.TASK_STATUS_IGNORED
) -> None:
    """The child's lifetime is its token's: revoked the moment it exits or is stopped."""
    try:
        await process.run(task_status=task_status)
    finally:
        if grant is not None:
            grant.revoke()


class Spawner(msgspec.Struct, eq=False):
    """The steps of one pair's spawns. ``label`` names the pair in logs and grants."""

    key: PairKey
    label: str
    store: Store
    writes: PendingWrites
    paths: IrisPaths
    inbox: Inbox  # where a child sends its lines and its exit
    slots: SlotPool | None = None
    access: Access | None = None  # the HTTP face's tokens: each child gets its own
    hub: EventHub | None = None  # who hears that an archived conversation was restored
    spares: SpareSource | None = None  # started claudes a new conversation of the team takes (spares.py)
    _taken: TakenSpare | None = None  # the spare the last launch took, bound once the pair knows

    @property
    def from_team(self) -> str | None:
        return self.key[0]

    @property
    def thread(self) -> str:
        return self.key[2]

    def start(
        self,
        action: RequestSlot | ProbeSession | Spawn,
        nursery: trio.Nursery,
        current: Callable[[], tuple[Team, Launcher]],
    ) -> None:
        """Run a step as a task of ``nursery`` (the pair's) that reports to the inbox, so
        the actor keeps answering meanwhile. ``current``: the team and its launcher, read
        when the step runs (a reload may change them)."""

        async def run_step() -> None:
            team, launcher = current()
            await self.inbox.report(await self.step(action, team, launcher, nursery))
            if self._taken is not None:  # the pair heard Spawned: the spare's lines may follow
                self._taken.bind(self.inbox.sender())
                self._taken = None

        nursery.start_soon(run_step)

    async def step(
        self, action: RequestSlot | ProbeSession | Spawn, team: Team, launcher: Launcher, nursery: trio.Nursery
    ) -> Reporting:
        """One step, as the process machine asked; what it returns goes to the pair's inbox."""
        match action:
            case RequestSlot():
                if self.slots is not None:
                    await self.slots.acquire_slot(self.key)
                return SlotGranted()
            case ProbeSession():
                return await self.probe_session(team, launcher)
            case Spawn():
                return await self.launch(team, launcher, action, nursery)

    async def renew_session(self, to_team: str) -> str:
        """A new session id for the pair, now (a reset); raises IrisError if the store refuses."""
        await self.store.call(sessions.get_or_create, self.from_team, to_team, time.time(), thread=self.thread)
        row = await self.store.call(sessions.replace_session_id, self.from_team, to_team, time.time(),
                                    thread=self.thread)
        return row.session_id

    async def probe_session(self, team: Team, launcher: Launcher) -> SessionProbed | SpawnFailed:
        """May the pair's session be resumed (claude has its transcript), and did it
        ever take a turn (the store says)?"""
        try:
            row = await self.store.call(sessions.get_or_create, self.from_team, team.name, time.time(),
                                        thread=self.thread)
            if row.status == sessions.ARCHIVED:  # a tell came: the conversation comes back (or a new one)
                row = await self._restore(team) or row
            resumable = await launcher.can_resume(row.session_id)
        except IrisError as exc:  # claude cannot be checked, or the database refused
            return SpawnFailed(exc.message)
        except Exception as exc:  # a bug or a broken database must not take other pairs down
            log.exception("session check failed", extra={"pair": self.label})
            return SpawnFailed(f"irisd could not check the session: {exc}")
        return SessionProbed(SessionProbe(resumable=resumable, used=row.message_count > 0))

    async def _restore(self, team: Team) -> sessions.SessionRow | None:
        fresh = team.restore == "fresh"
        row = await self.store.call(sessions.restore, self.from_team, team.name, time.time(), fresh=fresh,
                                    thread=self.thread)
        if row is not None:
            detail = "a tell came" + ("; a new conversation (settings.sessions.restore: fresh)" if fresh else "")
            log.info("restored an archived conversation", extra={"pair": self.label, "fresh": fresh})
            publish_change(self.hub, sessions.info(row), "restored", detail)
        return row

    async def launch(
        self,
        team: Team,
        launcher: Launcher,
        spawn: Spawn,
        nursery: trio.Nursery,
    ) -> Spawned | SpawnFailed:
        """Start the child in ``nursery`` (the pair's); under a new session id if ``spawn.renew``."""
        started = trio.current_time()
        if (taken := await self._take_spare(team, launcher, spawn)) is not None:
            return taken
        grant: ChildGrant | None = None
        try:
            if spawn.renew:
                row = await self.store.call(sessions.replace_session_id, self.from_team, team.name, time.time(),
                                            thread=self.thread)
            else:
                row = await self.store.call(sessions.get_or_create, self.from_team, team.name, time.time(),
                                            thread=self.thread)
            access = child_access(
                self.access, team=team.name, label=self.label, paths=self.paths, remote=bool(launcher.host)
            )
            grant = access.grant
            command = launcher.command(launch_spec(team, access, session_id=row.session_id, spawn=spawn))
            # What was launched, for people: it need not hold up a start on a full disk.
            await self.writes.save(
                None, partial(sessions.record_spawn, thread=self.thread), self.from_team, team.name, command.argv,
                msgspec.json.encode(team),
            )
            # What the resumed session had spent, read before the child can add to it.
            start = launcher.stored_total(row.session_id) if spawn.resume else Spent()
            process = launcher.child(command, self.inbox.sender())
            await nursery.start(run_child, process, grant)
            if command.preamble:  # what must not be in a command line (a remote child's env and token)
                await process.send(command.preamble)
        except IrisError as exc:  # claude cannot start, or the database refused the spawn's writes
            if grant is not None:
                grant.revoke()
            return SpawnFailed(exc.message)
        except Exception as exc:  # a bug or a broken database must not take other pairs down
            if grant is not None:
                grant.revoke()
            log.exception("spawn failed", extra={"pair": self.label})
            return SpawnFailed(f"irisd could not start claude: {exc}")
        log.info(
            "spawned claude",
            extra={"pair": self.label, "pid": process.pid, "resume": spawn.resume, "host": launcher.host,
                   "session_id": row.session_id, "spawn_s": round(trio.current_time() - started, 3)},
        )
        return Spawned(process, row.session_id, start)

    async def _take_spare(self, team: Team, launcher: Launcher, spawn: Spawn) -> Spawned | SpawnFailed | None:
        """A new conversation on a spare claude of the team, if one is up (see spares.py):
        the pair's conversation takes its session id and its token speaks for the pair."""
        if self.spares is None or spawn.resume or spawn.max_budget_usd is not None or launcher.host:
            return None
        spare = self.spares.take(team.name)
        if spare is None:
            return None
        try:
            await self.store.call(sessions.get_or_create, self.from_team, team.name, time.time(), thread=self.thread)
            row = await self.store.call(
                sessions.replace_session_id, self.from_team, team.name, time.time(), spare.session_id,
                thread=self.thread,
            )
        except IrisError as exc:
            spare.process.stop()
            return SpawnFailed(exc.message)
        spare.grant.rebind(Caller.child(team=team.name, pair=self.label))
        self._taken = spare
        await self.writes.save(
            None, partial(sessions.record_spawn, thread=self.thread), self.from_team, team.name, spare.argv,
            msgspec.json.encode(team),
        )
        log.info("a new conversation on a spare claude",
                 extra={"pair": self.label, "pid": spare.process.pid, "session_id": row.session_id})
        return Spawned(spare.process, row.session_id, Spent())
