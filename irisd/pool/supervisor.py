"""The pool of pairs: each pair's actor runs in the pool's nursery; slots under
``maxProcesses`` are granted by the pure policy in ``policy.py``.

The pool is the pairs' ``SlotPool``: it alone knows which pairs hold a slot, and a
pair tells it (``pair_changed``) when its state changed. Other actors see pairs only
through frozen snapshots."""

from __future__ import annotations

import logging
from typing import Any

import trio

from iris_common.config import IrisConfig
from iris_common.paths import IrisPaths
from irisd.events import EventHub
from irisd.pool.approvals import Pending
from irisd.pool.pair import ChildFactory, Pair, PairSnapshot, claude_child
from irisd.pool.policy import Evict, Grant, PairKey, PairView, decide_slot, may_start_spare
from irisd.pool.remote import RemotePair, RemoteTeams
from irisd.pool.spares import SparePool
from irisd.store import approvals
from irisd.store.facade import Store
from irisd.tell.active import ActiveTell
from irisd.tell.service import not_here
from irisd.tokens import Access
from protocol.errors import InvalidRequestError, NotFoundError
from protocol.messages import ApprovalReply, Decide, ProcessInfo
from protocol.pairs import pair_label

log = logging.getLogger("irisd.pool")

WAKE_ALL_PARALLELISM = 4


class Supervisor:
    def __init__(
        self,
        *,
        config: IrisConfig,
        paths: IrisPaths,
        store: Store,
        hub: EventHub | None = None,
        child_factory: ChildFactory = claude_child,
        access: Access | None = None,
        remote_teams: RemoteTeams | None = None,
    ) -> None:
        self.config = config
        # Teams that are not a local claude (A2A agents, other irisds' teams): their
        # pairs hold no process and no slot, and are kept apart from the slot policy.
        self.remote_teams = remote_teams or RemoteTeams()
        self.remote_pairs: dict[PairKey, RemotePair] = {}
        self.access = access  # the HTTP face's tokens: each child gets its own
        self.paths = paths
        self.store = store
        self.hub = hub or EventHub()
        self.child_factory = child_factory
        self.pairs: dict[PairKey, Pair] = {}
        self._nursery: trio.Nursery | None = None
        self._creating: dict[PairKey, trio.Event] = {}
        self._changed = trio.Event()
        self._holders: set[PairKey] = set()  # pairs whose child counts against maxProcesses
        self._waiting: dict[PairKey, int] = {}  # pairs waiting for a slot: how many are busy
        # Started claudes a new conversation takes (settings.sessions.spares): they hold slots too.
        self.spares = SparePool(config=config, paths=paths, access=access, child_factory=child_factory,
                                may_start=self._room_for_a_spare, changed=self.pair_changed)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own every pair until cancelled; cancelling stops every child."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.spares.run)
            task_status.started()
            await trio.sleep_forever()

    async def runner(self, from_team: str | None, to_team: str, thread: str = "") -> Pair | RemotePair:
        """Whoever runs the thread's tells (the pair's default thread unless named): its
        local claude's actor, or a remote team's."""
        executor = self.remote_teams.get(to_team)
        if executor is None:
            return await self.pair(from_team, to_team, thread)
        key: PairKey = (from_team, to_team, thread)
        remote = self.remote_pairs.get(key)
        if remote is None or remote.executor is not executor:
            remote = RemotePair(
                from_team=from_team,
                executor=executor,
                store=self.store,
                on_change=self.pair_changed,
                thread=thread,
                handoff_timeout_s=self.config.settings.handoff_timeout / 1000,
            )
            assert self._nursery is not None
            await self._nursery.start(self._guard_remote, remote)
            self.remote_pairs[key] = remote
        remote.handoff_timeout_s = self.config.settings.handoff_timeout / 1000  # as reloaded last
        return remote

    async def _guard_remote(
        self, pair: RemotePair, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            await pair.run(task_status=task_status)
        finally:
            if self.remote_pairs.get(pair.key) is pair:
                del self.remote_pairs[pair.key]

    async def pair(self, from_team: str | None, to_team: str, thread: str = "") -> Pair:
        """The actor of the pair's thread (its default thread unless named), started on
        first use. Each thread is a pair of its own for the pool: its own claude, counted
        against maxProcesses and evicted least recently used like any other."""
        if (executor := self.remote_teams.get(to_team)) is not None:
            raise not_here(to_team, executor, "it has no claude process here to wake, stop, reset or decide for; "
                           "ask it with 'iris tell'")
        key: PairKey = (from_team, to_team, thread)
        while key not in self.pairs:
            pending = self._creating.get(key)
            if pending is not None:
                await pending.wait()
                continue
            self._creating[key] = done = trio.Event()
            try:
                pair = Pair(
                    from_team=from_team,
                    team=self.config.team(to_team),
                    config=self.config,
                    paths=self.paths,
                    store=self.store,
                    slots=self,
                    hub=self.hub,
                    child_factory=self.child_factory,
                    access=self.access,
                    thread=thread,
                    spares=self.spares,
                )
                assert self._nursery is not None
                await self._nursery.start(self._guard, pair)
                self.pairs[key] = pair
            finally:
                del self._creating[key]
                done.set()
        return self.pairs[key]

    async def _guard(
        self, pair: Pair, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run one pair; a bug in it is logged and that pair alone starts afresh."""
        try:
            await pair.run(task_status=task_status)
        except Exception:
            log.exception("pair crashed; it will start afresh on next use", extra={"pair": pair.label})
        finally:
            if self.pairs.get(pair.key) is pair:
                del self.pairs[pair.key]
            self.release_slot(pair.key)

    # --- a reloaded config ----------------------------------------------------------------

    def reconfigure(self, config: IrisConfig, *, retire: set[str], restart: set[str]) -> None:
        """Take a reloaded config: pairs of ``retire``d teams (either side) and of
        ``restart``ed ones stop their claude once idle; every other pair keeps its warm
        claude and reads the new settings for its next tells."""
        self.config = config
        self.spares.reconfigure(config, restart | retire)
        for remote in self.remote_pairs.values():
            if self.remote_teams.get(remote.executor.team.name) is not remote.executor:
                remote.close()  # its running tells finish; the next tell gets a new pair
        for pair in list(self.pairs.values()):
            from_team, to_team, _ = pair.key
            # not in config: removed by this reload, or by an earlier one (its stopped pairs stay)
            if to_team not in config.teams or (from_team is not None and from_team in retire):
                self._stop_once_idle(pair, "its team was removed from config.yaml")
                continue
            pair.reconfigure(config.team(to_team), config)
            if to_team in restart:
                self._stop_once_idle(pair, "config.yaml changed its team: the next tell starts it anew")

    def _stop_once_idle(self, pair: Pair, reason: str) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(self._stop_when_idle, pair, reason)

    async def _stop_when_idle(self, pair: Pair, reason: str) -> None:
        """Let the pair finish what it holds (running and queued tells), then stop its claude."""
        while self.pairs.get(pair.key) is pair:
            view = pair.view(holds_slot=False)
            if view.state in ("stopped", "failed"):
                return
            changed = self._changed
            if view.state == "idle" and view.queued == 0:
                await pair.sleep(reason=reason)  # refused (and tried again) if a tell came in meanwhile
                continue
            await changed.wait()

    # --- the SlotPool of the pairs ----------------------------------------------------------

    def pair_changed(self) -> None:
        """A pair's state or slot changed: wake whoever waits for a slot."""
        self._changed.set()
        self._changed = trio.Event()

    def release_slot(self, key: PairKey) -> None:
        self._holders.discard(key)
        self.pair_changed()
        self.spares.refill()  # a spare may have been waiting for the room

    def _views(self) -> list[PairView]:
        return [*(p.view(p.key in self._holders) for p in self.pairs.values()), *self.spares.views()]

    def _room_for_a_spare(self) -> bool:
        return may_start_spare(self._views(), self.config.settings.max_processes)

    async def acquire_slot(self, key: PairKey) -> None:
        """Wait until pair ``key`` may start a child, evicting the least recently used
        idle pair if the pool is full. Never stops a busy pair. The slot is held from the
        moment this returns (no other reservation can miss it)."""
        announced = False
        try:
            while True:
                decision = decide_slot(key, self._views(), self.config.settings.max_processes)
                if isinstance(decision, Grant):
                    self._holders.add(key)
                    self._waiting.pop(key, None)
                    self._refresh_phases(key)
                    return
                changed = self._changed
                if isinstance(decision, Evict) and self.spares.holds(decision.key):
                    self.spares.stop(decision.key, f"its slot went to {key[0] or 'external'}->{key[1]}")
                elif isinstance(decision, Evict):
                    victim = self.pairs[decision.key]
                    label = pair_label(*key)
                    log.info("evicting idle pair", extra={"pair": victim.label, "for": label})
                    await victim.request_stop(f"evicted (least recently used) for {label}")
                else:
                    self._waiting[key] = decision.busy
                    self._refresh_phases(key)
                    if not announced:
                        announced = True
                        log.info(
                            "every process is busy; waiting for a free slot",
                            extra={"pair": pair_label(*key), "busy": decision.busy},
                        )
                await changed.wait()
        finally:
            self._waiting.pop(key, None)

    def _refresh_phases(self, key: PairKey) -> None:
        pair = self.pairs.get(key)
        if pair is not None:
            pair.refresh_phases()

    def waiting_for_slot(self, key: PairKey) -> int:
        """How many busy processes fill the pool while pair ``key`` waits (0: it does not)."""
        return self._waiting.get(key, 0)

    # --- queries and bulk operations -----------------------------------------------------

    def _runners(self) -> list[Pair | RemotePair]:
        return [*self.pairs.values(), *self.remote_pairs.values()]

    def find_tell(self, tell_id: str) -> ActiveTell | None:
        for pair in self._runners():
            tell = pair.find(tell_id)
            if tell is not None:
                return tell
        return None

    async def ask_budget(self, tell_id: str, question: str, details: dict[str, Any]) -> Pending | None:
        """Ask the person whether the chain of the running tell ``tell_id`` may spend beyond its
        budget, through the approval desk of the local pair that runs it (None: none does)."""
        for pair in self.pairs.values():
            if pair.find(tell_id) is not None:
                try:
                    return await pair.ask_budget(tell_id, question, details)
                except NotFoundError:
                    return None
        return None

    def cancel(self, tell_id: str) -> ActiveTell | None:
        """Ask the pair running ``tell_id`` to cancel it; None if no pair runs it."""
        for pair in self._runners():
            tell = pair.find(tell_id)
            if tell is not None:
                pair.cancel(tell_id)
                return tell
        return None

    def pair_nowait(self, key: PairKey) -> Pair | None:
        """The pair's actor if it runs (none is started)."""
        return self.pairs.get(key)

    async def write_held(self, tell_id: str | None = None) -> None:
        """What the pairs hold to write (a tell's end held for the next tell's start: at
        most ``HOLD_END_S``), written before a reader of the database reads; with
        ``tell_id``, only the pair that holds that tell's end (a reader of that tell)."""
        for pair in [pair for pair in self.pairs.values() if pair.writes.holding]:
            if tell_id is None or pair.tells.holds(tell_id):
                await pair.write_held()

    def snapshots(self) -> list[PairSnapshot]:
        return [pair.snapshot() for pair in self._runners()]

    async def decide(self, request: Decide) -> ApprovalReply:
        """Answer a pending approval through the pair whose claude asked (NotFoundError if
        there is none by that id; InvalidRequestError if it was decided already)."""
        for pair in list(self.pairs.values()):
            if request.approval_id in pair.snapshot().pending_approvals:
                decided = await pair.decide(
                    request.approval_id, allow=request.allow, remember=request.remember, reason=request.reason,
                    by=request.by or "unknown", content=request.content,
                )
                return ApprovalReply(approval=decided)
        known = await self.store.call(approvals.get, request.approval_id)
        if known is None:
            raise NotFoundError(f"no approval with id {request.approval_id!r}; 'iris approvals' lists the pending ones")
        who = f" by {known.decided_by}" if known.decided_by else ""
        raise InvalidRequestError(f"approval {known.id} is already {known.status}{who}; nothing to decide")

    def snapshot(self, key: PairKey) -> PairSnapshot | None:
        pair: Pair | RemotePair | None = self.pairs.get(key) or self.remote_pairs.get(key)
        return pair.snapshot() if pair is not None else None

    def statistics(self) -> list[ProcessInfo]:
        return [pair.statistics() for pair in self._runners()]

    async def wake_all(self, from_team: str | None, *, parallel: bool) -> dict[str, str]:
        """Wake (from_team -> every other team); returns team -> error for failures."""
        errors: dict[str, str] = {}
        limiter = trio.CapacityLimiter(WAKE_ALL_PARALLELISM if parallel else 1)

        async def wake(team: str) -> None:
            async with limiter:
                try:
                    with trio.move_on_after(self.config.settings.session_init_timeout / 1000) as waited:
                        await (await self.pair(from_team, team)).wake()
                    if waited.cancelled_caught:
                        errors[team] = "still starting (it may be waiting for a free process slot)"
                except Exception as exc:  # reported per team; one failure does not stop the rest
                    errors[team] = str(exc)

        async with trio.open_nursery() as nursery:
            for team in sorted(self.config.teams):
                if team != from_team and self.remote_teams.get(team) is None:
                    nursery.start_soon(wake, team)
        return errors
