"""Spare claudes: started and idle, so that a new conversation's first tell is answered by
a process that is already up (``settings.sessions.spares``, per team under
``teams.NAME.sessions.spares``; default 0).

How it works
------------
claude fixes at start everything it is started with: its session id (``--session-id``),
folder, system prompt, permissions, environment and ``--mcp-config`` (the file holding
its token). All of these are the team's but two: the session id and the pair its token
speaks for. So a spare is started exactly as a new conversation of its team would be,
with a session id minted here and a token minted for the team with no pair yet. When a
pair of that team starts a NEW conversation (its first tell, a reset, a lost one), its
spawn takes a spare instead of starting a claude (``launch.Spawner.launch``):

* the pair's conversation takes the spare's session id: no conversation ever existed
  under the id the pair had (claude never saw it);
* the spare's token is rebound to the pair (irisd looks a token up on every request);
* the spare's lines and its exit go to the pair's inbox from then on (after the pair
  heard ``Spawned``: nothing it prints is lost or early), and the pair stops it as its own.

Once started, a spare warms up before it is offered: claude builds what a session's first
turn sends the model (system prompt, tool schemas, the skills and agents it lists) only
when a turn or a question needs it (measured with 2.1.330: about 300 ms of CPU on a
session's first turn, 75 ms on a later one). So the spare asks claude its context usage
(``wire.context_usage_request``: counted locally, no model request, nothing written to the
session) and is offered once claude answered; the pair's first turn then finds that work
done (70 to 100 ms of CPU less). Then it submits a throw-away prompt that a hook blocks
(``WarmUp``: the hook added to claude's flag settings before, removed after): claude runs
what a prompt's submission runs (attachments, the built-in plugins' prompt hooks: most of
what a first turn does more than a later one), with no model request and no turn. It also
means an offered spare has read its input: it is up, not still starting.

A pair that resumes a conversation never takes one (``--resume`` is fixed at start), nor
a tell with a budget of its own (``--max-budget-usd``), nor a team on another host, nor
any pair when irisd has no HTTP face (the stdio shim's pair is in its argv).

A spare holds a slot under ``maxProcesses``, starts only into a free one and is the first
to go when a pair needs one (``policy.py``). Taken, it is replaced in the background
AFTER_TURN_S after its first turn ended (or REPLACE_AFTER_S after the take, whichever comes
first): a claude starting takes a core for about a second, and on a small machine the
first turn, the one the spare is for, would share the CPU with it; so would the turn's
reply (starting a claude holds irisd's loop for a few milliseconds: measured, 3 ms more
between the tell's end and its caller having the reply). One that exits on its own is
replaced after a pause; a reload stops a changed team's spares. The pool's nursery owns
every spare's process, taken or not: cancelling it stops them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import Callable
from typing import Any

import msgspec
import trio

from iris_common.config import IrisConfig, Team
from iris_common.paths import IrisPaths, session_file
from irisd.claude.launcher import Child, ChildFactory, launcher_for
from irisd.claude.process import ChildEvent, ChildExited, ChildLine
from irisd.claude.wire import (
    AnyLine,
    ControlResponseLine,
    ResultLine,
    context_usage_request,
    flag_settings_request,
    settings_request,
    user_turn,
)
from irisd.pool.launch import child_access, launch_spec, run_child
from irisd.pool.pair_events import PairEvent
from irisd.pool.policy import PairKey, PairView
from irisd.pool.process_machine import Spawn
from irisd.tokens import Access, ChildGrant
from protocol.errors import IrisError

log = logging.getLogger("irisd.spares")

RETRY_S = 30.0  # a spare that could not start, or exited on its own: the team's next one waits this long
LINES = 64  # what a spare may print before its pair reads it (it prints nothing until its first turn)
WARM_UP_S = 60.0  # a warm-up not done by then: offered as it is (stopped if the hook was asked for)
REPLACE_AFTER_S = 10.0  # a taken spare's replacement starts AFTER_TURN_S after its first turn ended, or by then
AFTER_TURN_S = 1.0  # long enough for the turn's reply to reach its caller; short against a claude's start
WARM_UP_ID = "iris-spare-warm-up"
SETTINGS_ID = "iris-spare-warm-up-settings"
HOOK_ID = "iris-spare-warm-up-hook"
UNHOOK_ID = "iris-spare-warm-up-unhook"
WARM_UP_PROMPT = "Iris warms up a spare claude: a hook blocks this prompt before any model request."
# Every prompt blocked (exit code 2) before it reaches the model; only while the hook is there.
BLOCKING_HOOK: dict[str, Any] = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "exit 2"}]}]}}
NO_HOOKS: dict[str, Any] = {"hooks": None}  # the flag settings' hooks removed (the team's own are in its files)
BLOCKED = "a blocked prompt"  # the whole warm-up went as planned
HOOKS_OFF = "answered; the team's settings turn hooks off, so no prompt"  # the context usage alone


class WarmUp(msgspec.Struct):
    """A spare's warm-up, step by step: pure, fed claude's lines, it says what to send next.

    0. its context usage (``get_context_usage``, counted locally): claude builds what a
       session's first request sends the model (system prompt, tools, skills, agents);
    1. (``block``) its effective settings (``get_settings``): where the team's settings turn
       hooks off (``disableAllHooks``, or only managed hooks allowed) no hook would block the
       prompt below, which would reach the model (a paid request): the warm-up ends here;
    2. a ``UserPromptSubmit`` hook that blocks every prompt, added to claude's flag settings
       (``apply_flag_settings``, the layer ``--settings`` sets);
    3. a throw-away prompt: claude runs what a prompt's submission runs (its attachments, the
       built-in plugins' prompt hooks), then the hook blocks it: no model request, no turn
       (``num_turns`` 0), the prompt not kept; what a later ``--resume`` sends is unchanged;
    4. the hook removed, so that no later prompt runs it.

    ``outcome``: "" while it runs; "answered" (the context usage, no prompt), HOOKS_OFF,
    BLOCKED, "refused: why" (an older claude: up all the same), or "spoiled: why" (the prompt
    reached the model, or the hook stayed): such a spare is never offered."""

    block: bool = True
    step: int = 0
    outcome: str = ""

    def start(self) -> bytes:
        return context_usage_request(WARM_UP_ID)

    def offerable(self) -> bool:
        """Whether the spare may be offered as it is now (once done, or before any hook)."""
        return not self.outcome.startswith("spoiled") and (self.outcome != "" or self.step <= 1)

    def heard(self, line: AnyLine) -> bytes | None:
        """What to send claude after ``line`` (None: nothing, e.g. not an answer of this step)."""
        if self.outcome:
            return None
        if self.step == 3:
            if not isinstance(line, ResultLine):
                return None
            if line.num_turns != 0:
                self.outcome = "spoiled: the warm-up prompt reached the model (no hook blocked it)"
                return None
            self.step = 4
            return flag_settings_request(UNHOOK_ID, NO_HOOKS)
        expected = (WARM_UP_ID, SETTINGS_ID, HOOK_ID, "", UNHOOK_ID)[self.step]
        if not (isinstance(line, ControlResponseLine) and line.response.request_id == expected):
            return None
        refused = "" if line.response.subtype == "success" else line.response.error or line.response.subtype
        if self.step == 0:
            if refused or not self.block:
                self.outcome = f"refused: {refused}" if refused else "answered"
                return None
            self.step = 1
            return settings_request(SETTINGS_ID)
        if self.step == 1:
            # (a claude that cannot say goes on: the prompt's answer tells, by its num_turns)
            if not refused and hooks_off(line.response.response.get("effective")):
                self.outcome = HOOKS_OFF
                return None
            self.step = 2
            return flag_settings_request(HOOK_ID, BLOCKING_HOOK)
        if self.step == 2:
            if refused:
                self.outcome = "answered"  # no hook, so no prompt: the context usage alone
                return None
            self.step = 3
            return user_turn(WARM_UP_PROMPT)
        self.outcome = f"spoiled: claude kept the hook that blocks prompts ({refused})" if refused else BLOCKED
        return None


def hooks_off(effective: object) -> bool:
    """Whether claude's effective settings keep a hook of its flag settings from running."""
    return isinstance(effective, dict) and bool(
        effective.get("disableAllHooks") or effective.get("allowManagedHooksOnly"))


class Spare(msgspec.Struct, eq=False):
    """One started claude waiting for a pair of ``team``."""

    team: str
    key: PairKey  # how the slot policy knows it: ("spare #N", team)
    session_id: str
    process: Child
    grant: ChildGrant
    argv: list[str]  # what was started (the pair records it as its launch)
    ready_at: float  # monotonic: when it was offered (the oldest goes first under pressure)
    taken: bool = False
    exited: bool = False
    warmed: str = ""  # how its warm-up went: WarmUp.outcome, "" (not yet, or never)
    warming: WarmUp = msgspec.field(default_factory=WarmUp)
    _target: trio.MemorySendChannel[PairEvent] | None = None
    _bound: trio.Event = msgspec.field(default_factory=trio.Event)
    _settled: trio.Event = msgspec.field(default_factory=trio.Event)  # warmed up, or exited

    async def warm_up(self) -> None:
        """Have claude run now what a session's first turn would (``WarmUp``: ``forward``
        sends each next step as claude answers the last), and wait until it is done (or it
        exits; at most WARM_UP_S). Raises IrisError if its input is closed."""
        await self.process.send(self.warming.start())
        with trio.move_on_after(WARM_UP_S):
            await self._settled.wait()

    def bind(self, inbox: trio.MemorySendChannel[PairEvent]) -> None:
        """Its lines and its exit go to ``inbox`` (its pair's) from now on."""
        self._target = inbox
        self._bound.set()

    async def forward(
        self,
        events: trio.MemoryReceiveChannel[ChildEvent],
        exited: Callable[[Spare], None],
        turned: Callable[[Spare], None],
    ) -> None:
        """Until it exits: what it says while it waits goes nowhere but its answer to the
        warm-up (claude prints nothing else before its first turn; a line or an exit still
        on its way when it is taken goes to the pair, which handles an exit as any
        child's); once taken, every event goes to its pair, in order, after the pair was
        told it has this child, and ``turned`` hears when its first turn ended (its first
        result, or its exit)."""
        first_turn = True
        async for event in events:
            if not self.taken:
                if isinstance(event, ChildExited):
                    self.exited = True
                    self._settled.set()
                    exited(self)
                    return
                if isinstance(event, ChildLine) and (following := self.warming.heard(event.line)) is not None:
                    with contextlib.suppress(IrisError):  # its input closed: its exit follows
                        await self.process.send(following)
                if self.warming.outcome and not self._settled.is_set():
                    self.warmed = self.warming.outcome
                    self._settled.set()
                continue  # an untaken spare has no turn: nothing else it says matters
            await self._bound.wait()
            assert self._target is not None
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await self._target.send(event)
            ended = isinstance(event, ChildExited) or (isinstance(event, ChildLine)
                                                        and isinstance(event.line, ResultLine))
            if first_turn and ended:
                first_turn = False
                turned(self)
            if isinstance(event, ChildExited):
                return


def _forget_session(paths: IrisPaths, team: Team, session_id: str) -> None:
    """Remove the session file an untaken spare's warm-up left (its blocked prompt's record:
    no conversation), so that no one is offered a session no pair ever had. Inline: one
    unlink (a worker thread would let trio's autojump clock, in the tests, skip ahead)."""
    with contextlib.suppress(OSError):
        os.unlink(session_file(paths.claude_config_dir, team.path, session_id))


class SparePool:
    """The spares of every team. ``slots``: the supervisor, which counts them under
    ``maxProcesses`` (``may_start``) and evicts them first (``stop``)."""

    def __init__(
        self,
        *,
        config: IrisConfig,
        paths: IrisPaths,
        access: Access | None,
        child_factory: ChildFactory,
        may_start: Callable[[], bool],
        changed: Callable[[], None],
    ) -> None:
        self.config = config
        self.paths = paths
        self.access = access
        self.child_factory = child_factory
        self._may_start = may_start
        self._changed = changed  # the pool's holders changed: whoever waits for a slot looks again
        self.spares: dict[PairKey, Spare] = {}  # started and warmed up, not yet taken
        self._warming: dict[PairKey, Spare] = {}  # started, warming up: not offered, but evicted as a spare
        self._starting: dict[str, int] = {}  # team -> spares being started
        self._paused_until: dict[str, float] = {}  # team -> no new spare before then
        self._replacing: dict[PairKey, tuple[str, float]] = {}  # taken, first turn running: (team, until)
        self._serial = 0
        self.block_warm_up = True  # off once a warm-up prompt was not blocked (a team's settings may forbid hooks)
        self._wake = trio.Event()
        self._nursery: trio.Nursery | None = None

    # --- what the pool and the pairs ask -------------------------------------------------

    def wanted(self, team: Team) -> int:
        """How many spares ``team`` should have: none for a team this pool cannot serve."""
        if self.access is None or team.host or team.a2a:
            return 0
        return team.spares

    def views(self) -> list[PairView]:
        """The spares as the slot policy sees them (starting ones hold their slot too; one
        warming up is a spare to evict like any other)."""
        ready = [
            PairView(key=s.key, state="idle", last_used_at=s.ready_at, holds_slot=True, spare=True)
            for s in [*self.spares.values(), *self._warming.values()]
        ]
        starting = [
            PairView(key=(f"starting spare #{n}", team, ""), state="spawning", last_used_at=0.0, holds_slot=True)
            for team, count in self._starting.items() for n in range(count)
        ]
        return ready + starting

    def take(self, team: str) -> Spare | None:
        """A started spare of ``team``, now the caller's (who binds it once its pair knows);
        a new one starts in the background AFTER_TURN_S after the spare's first turn ended
        (a claude starting takes a core for about a second, which that turn and its reply
        would share on a small machine), at the latest REPLACE_AFTER_S after the take."""
        for key, spare in sorted(self.spares.items(), key=lambda item: item[1].ready_at):
            if spare.team == team and not spare.exited:
                del self.spares[key]
                spare.taken = True
                self._replacing[key] = (team, trio.current_time() + REPLACE_AFTER_S)
                self._changed()
                self.refill()
                log.info("a pair took a spare claude", extra={"team": team, "pid": spare.process.pid})
                return spare
        return None

    def holds(self, key: PairKey) -> bool:
        """Whether ``key`` is an untaken spare of this pool (warmed up or not)."""
        return key in self.spares or key in self._warming

    def stop(self, key: PairKey, reason: str) -> None:
        """Stop an untaken spare, warmed up or not (evicted for a pair, or its team changed)."""
        spare = self.spares.pop(key, None) or self._warming.pop(key, None)
        if spare is not None:
            log.info("stopping a spare claude", extra={"team": spare.team, "pid": spare.process.pid, "reason": reason})
            spare.process.stop()
            self._changed()

    def reconfigure(self, config: IrisConfig, changed: set[str]) -> None:
        """A reloaded config: the spares of ``changed`` teams (and of removed ones) were started
        as the old config said: they go, and new ones start."""
        self.config = config
        for key, spare in [*self.spares.items(), *self._warming.items()]:
            if spare.team in changed or spare.team not in config.teams:
                self.stop(key, "its team changed in config.yaml")
        self.refill()

    def refill(self) -> None:
        """Look again at what is missing (after a take, a slot freed, a reload)."""
        self._wake.set()

    def pids(self) -> dict[str, list[int]]:
        """Each team's untaken spares' pids."""
        found: dict[str, list[int]] = {}
        for spare in self.spares.values():
            if spare.process.pid is not None:
                found.setdefault(spare.team, []).append(spare.process.pid)
        return {team: sorted(pids) for team, pids in found.items()}

    # --- running -------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep every team's spares until cancelled (which stops every spare's process,
        taken or not)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            while True:
                self._wake = trio.Event()
                self._start_missing(nursery)
                deadline = min([*self._paused_until.values(), *(until for _, until in self._replacing.values())],
                               default=trio.current_time() + 3600)
                with trio.move_on_at(max(deadline, trio.current_time())):
                    await self._wake.wait()

    def _start_missing(self, nursery: trio.Nursery) -> None:
        now = trio.current_time()
        self._replacing = {key: held for key, held in self._replacing.items() if held[1] > now}
        for team in self.config.teams.values():
            missing = (
                self.wanted(team)
                - self._starting.get(team.name, 0)
                - sum(s.team == team.name for s in [*self.spares.values(), *self._warming.values()])
                - sum(held == team.name for held, _ in self._replacing.values())
            )
            if missing <= 0 or self._paused_until.get(team.name, 0.0) > now:
                continue
            self._paused_until.pop(team.name, None)
            for _ in range(missing):
                if not self._may_start():  # a spare never evicts: it waits for a free slot
                    return
                self._starting[team.name] = self._starting.get(team.name, 0) + 1
                self._changed()
                nursery.start_soon(self._spare, team)

    async def _spare(self, team: Team) -> None:
        """One spare's life: started, waiting, maybe taken, until its process ends."""
        self._serial += 1
        key: PairKey = (f"spare #{self._serial}", team.name, "")
        starting = True
        grant: ChildGrant | None = None
        spare: Spare | None = None
        try:
            launcher = launcher_for(team, self.config, self.paths.claude_config_dir, self.child_factory)
            session_id = str(uuid.uuid4())
            # the team's token with no pair yet (rebound to the pair that takes it)
            access = child_access(self.access, team=team.name, label="", paths=self.paths, remote=False)
            grant = access.grant
            command = launcher.command(launch_spec(team, access, session_id=session_id, spawn=Spawn(resume=False)))
            send, receive = trio.open_memory_channel[ChildEvent](LINES)
            process = launcher.child(command, send)
            assert grant is not None  # wanted() is 0 without an HTTP face
            spare = Spare(team=team.name, key=key, session_id=session_id, process=process, grant=grant,
                          argv=command.argv, ready_at=trio.current_time(), warming=WarmUp(block=self.block_warm_up))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(spare.forward, receive, self._exited, self._turned)
                await nursery.start(run_child, process, grant)  # its token is revoked when it ends
                self._warming[key] = spare
                starting = False
                self._unstart(team.name)
                started = trio.current_time()
                await spare.warm_up()
                if self._warming.pop(key, None) is None:  # stopped meanwhile: evicted, or its team changed
                    return
                if spare.exited:  # on its own, during its warm-up
                    log.warning("a spare claude exited before any pair took it", extra={"team": team.name})
                    self._pause(team.name)
                    return
                if not spare.warming.offerable():  # its conversation or its settings are not a new one's
                    if spare.warmed:  # the prompt got through, or the hook stayed: no more such warm-ups
                        self.block_warm_up = False
                    log.warning("a spare claude's warm-up went wrong; stopped, not offered", extra={
                        "team": team.name, "pid": process.pid, "warm_up": spare.warmed or "no answer in time"})
                    process.stop()
                    self._pause(team.name)
                    return
                if not spare.warmed:
                    log.warning("a spare claude did not answer its warm-up; offered as it is",
                                extra={"team": team.name, "pid": process.pid})
                spare.ready_at = trio.current_time()
                self.spares[key] = spare
                self._changed()  # a pair waiting for a slot may evict it now
                log.info("a spare claude is ready", extra={
                    "team": team.name, "pid": process.pid, "warm_up": spare.warmed or "no answer",
                    "warm_up_s": round(trio.current_time() - started, 3)})
        except IrisError as exc:  # claude cannot start: the team's next spare waits
            log.warning("a spare claude could not start", extra={"team": team.name, "error": exc.message})
            self._pause(team.name)
        except Exception:  # a bug must not take the pool down
            log.exception("a spare claude failed", extra={"team": team.name})
            self._pause(team.name)
        finally:
            if spare is not None and not spare.taken:  # its process has ended (the nursery above)
                _forget_session(self.paths, team, spare.session_id)
            if grant is not None and starting:
                grant.revoke()
            if starting:
                self._unstart(team.name)
            self.spares.pop(key, None)
            self._warming.pop(key, None)
            self._changed()
            self.refill()

    def _unstart(self, team: str) -> None:
        self._starting[team] -= 1
        if not self._starting[team]:
            del self._starting[team]

    def _turned(self, spare: Spare) -> None:
        """A taken spare's first turn ended: its replacement starts AFTER_TURN_S from now
        (once the turn's reply is out), if not sooner."""
        held = self._replacing.get(spare.key)
        if held is not None:
            team, until = held
            self._replacing[spare.key] = (team, min(until, trio.current_time() + AFTER_TURN_S))
            self.refill()

    def _exited(self, spare: Spare) -> None:
        """An untaken spare exited on its own: the team's next one waits a while (one
        stopped by ``stop`` is no longer in ``spares``)."""
        if spare.key not in self.spares:
            return
        log.warning("a spare claude exited before any pair took it", extra={"team": spare.team})
        self._pause(spare.team)

    def _pause(self, team: str) -> None:
        self._paused_until[team] = trio.current_time() + RETRY_S
