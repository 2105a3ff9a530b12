"""The mesh face of irisd: one connection to NATS, the directory, the home side and the
caller side of remote tells (README "Teams on many hosts").

``MeshService.run`` keeps a connection while ``settings.mesh`` is set: it announces the
offered teams, beats its heartbeat, watches the directory and registers a
``MeshExecutor`` in the pool for every team homed elsewhere, serves its own teams to the
mesh (``Home``), and reads the final results of its remote tells from ``IRIS_REPLIES``
(also those that came while it was down). A connection that cannot be made is tried
again every few seconds (``iris status`` and ``iris doctor`` say why); a reload that
changes ``settings.mesh`` reconnects with the new settings.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio
import trio.lowlevel

from iris_common.config import IrisConfig, Team
from iris_common.mesh import Mesh
from irisd import __version__
from irisd.caller import Dispatch
from irisd.events import EventHub
from irisd.mesh import records
from irisd.mesh.executor import KIND, Delivery, MeshExecutor, Route
from irisd.mesh.wire import (
    ENCODER,
    FINAL,
    LIVE,
    CancelMsg,
    FinalMsg,
    LiveMsg,
    RemoteTellMsg,
    path_out,
    read,
    speaker,
    tell_subject,
)
from irisd.pool.remote import RemoteTeams, RemoteTell, TellReport
from irisd.store import tells
from irisd.store.facade import Store
from irisd.tell.active import OnEnd, end_late
from protocol.messages import FINAL_TELL_STATUSES, UNFINISHED_TELL_STATUSES

if TYPE_CHECKING:
    from irisd.mesh.bridge import Bridge
    from irisd.mesh.directory import Directory
    from irisd.mesh.engine import Link
    from irisd.mesh.home import Home, TellEnds
    from irisd.mesh.lane import Lane
    from irisd.mesh.nats_wire import Message

log = logging.getLogger("irisd.mesh")

RECONNECT_S = 3.0  # the first wait before connecting again; doubled up to MAX_RECONNECT_S
MAX_RECONNECT_S = 60.0
RETRY_S = 1.0
HANDLED_WAIT_S = 10.0  # a running tell saves a final result in this time, or it is saved here
RECENTLY_ENDED = 4096  # remote tells ended here whose stored result may still come (kept in memory)


def unconfirmed(why: str) -> str:
    """The phase of a tell published without JetStream's ack (yet): it may be stored."""
    return f"sent, not confirmed yet ({why}); its result comes when the home runs it: do not send it again"


class MeshService:
    def __init__(
        self,
        *,
        config: IrisConfig,
        store: Store,
        remote_teams: RemoteTeams,
        dispatch: Dispatch,
        ends: TellEnds,
        hub: EventHub | None = None,
        on_end: OnEnd | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.hub = hub  # a late result's state reaches watchers, like every tell's end
        self.on_end = on_end  # and its end hook (pending questions): irisd/tell/active.py
        self.remote_teams = remote_teams
        self.dispatch = dispatch
        self.ends = ends  # a home's final result waits for its tell's end (Home._serve)
        self.routes: dict[str, Route] = {}
        # Remote tells that ended here on a final result (the live subject's copy, as a
        # rule), by id -> their home: the stored copy of that result, which comes after,
        # is acked at once, without a database read (the oldest are forgotten first: those
        # go the database's way, as after a restart).
        self._ended: dict[str, str] = {}
        self.link: Link | None = None
        self.lane: Lane | None = None  # the fast lane: tells, results and live messages (irisd/mesh/lane.py)
        self.directory: Directory | None = None
        self.home: Home | None = None
        self.problem = ""  # why there is no connection now
        self._changed = trio.Event()
        self._scope: trio.CancelScope | None = None
        self._connected = trio.Event()
        self._failures = 0  # connections refused in a row

    # --- lifetime ------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self.store.call(records.ensure)
        task_status.started()
        while True:
            if self.config.mesh is None:
                self._forget_teams()
                await self._wait_for_change()
                continue
            # The NATS client and its asyncio thread only while a mesh is configured: an irisd
            # without one never imports nats (about 0.2 s of CPU at each start).
            from irisd.mesh.bridge import open_bridge

            async with open_bridge() as bridge:
                while (mesh := self.config.mesh) is not None:
                    with trio.CancelScope() as self._scope:
                        try:
                            await self._serve(bridge, mesh)
                        except Exception as exc:  # a bug here must not take irisd down: start over
                            log.exception("mesh: the connection's tasks failed; starting over")
                            self.problem = f"the mesh face failed ({type(exc).__name__}); it starts over"
                            await trio.sleep(RECONNECT_S)
                    self._scope = None

    def reconfigure(self, config: IrisConfig) -> None:
        """A reloaded config: a changed mesh reconnects; changed teams are announced again."""
        old = self.config
        self.config = config
        if old.mesh != config.mesh and self._scope is not None:
            self._scope.cancel()
        self._changed.set()

    async def _wait_for_change(self) -> None:
        await self._changed.wait()
        self._changed = trio.Event()

    async def _serve(self, bridge: Bridge, mesh: Mesh) -> None:
        import nats.errors

        from irisd.mesh.directory import Directory
        from irisd.mesh.engine import FIRST_CONNECT_S, MeshError, lane_for, open_link
        from irisd.mesh.home import Home
        from irisd.mesh.lane import LaneError

        try:
            link = await open_link(bridge, mesh)
        except MeshError as exc:
            await self._wait_after_failure(f"mesh: not connected: {exc.message}", exc.message)
            return
        directory = Directory(link, version=__version__, on_change=self._sync_teams)
        try:
            taken = await directory.name_taken()
        except BaseException:
            await _close(link)
            raise
        if taken:  # never beat over the holder's heartbeat, nor read its tells
            await _close(link)
            await self._wait_after_failure(f"mesh: not joined: {taken}", taken)
            return
        lane = lane_for(link)  # served from its first connection on (run), closed with it
        try:
            await lane.connect(FIRST_CONNECT_S)
        except LaneError as exc:
            await _close(link)
            await self._wait_after_failure(f"mesh: not connected: {exc}", str(exc))
            return
        except BaseException:
            await _close(link)
            raise
        self.problem, self._failures = "", 0
        self.link, self.lane = link, lane
        self.directory = directory
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lane.run)
                self._changed = trio.Event()  # a change made while away is in this announcement
                nursery.start_soon(directory.serve_watch)
                await directory.announce(self._offered())  # once the watch has read the others' claims
                nursery.start_soon(directory.serve_heartbeat)
                nursery.start_soon(self._announce_on_change, directory)
                self.home = Home(link, lane, self.store, self.dispatch, lambda: self.config, self.ends)
                await nursery.start(self.home.run)
                await nursery.start(self._serve_replies, link, lane)
                lane.listen(f"iris.live.{mesh.name}.*", self._on_live)
                log.info("mesh: connected", extra={"irisd": mesh.name, "server": link.state.server})
                self._connected.set()
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(3):
                try:
                    await directory.heartbeat(up=False)  # a clean stop: down at once, not stale later
                except (nats.errors.Error, TimeoutError):
                    pass
                await link.close()
            self.link = self.directory = self.home = self.lane = None
            self._connected = trio.Event()

    async def _wait_after_failure(self, logged: str, problem: str) -> None:
        self.problem = problem
        log.error(logged)
        self._failures += 1
        with trio.move_on_after(min(MAX_RECONNECT_S, RECONNECT_S * 2 ** (self._failures - 1))):
            await self._wait_for_change()  # a reload tries again at once

    async def _announce_on_change(self, directory: Directory) -> None:
        while True:
            await self._wait_for_change()
            await directory.announce(self._offered())

    def _offered(self) -> list[Team]:
        mesh = self.config.mesh
        return [t for t in self.config.teams.values() if mesh is not None and mesh.offers(t.name)]

    # --- the caller's side -----------------------------------------------------------------

    def _sync_teams(self) -> None:
        """Register an executor for every team homed elsewhere (a local team's name wins)."""
        directory = self.directory
        if directory is None:
            return
        settings = self.config.settings
        wanted: dict[str, Team] = {}
        homes: dict[str, str] = {}
        for name, entry in directory.teams.items():
            if entry.home == directory.name or name in self.config.teams:
                continue
            wanted[name] = Team(
                name=name, path="", description=entry.description, color=entry.color,
                idle_timeout_ms=settings.idle_timeout, response_timeout_ms=settings.response_timeout,
            )
            homes[name] = entry.home
        for executor in self.remote_teams.all():
            if executor.kind == KIND and executor.team.name not in wanted:
                self.remote_teams.unregister(executor.team.name)
        for name, team in wanted.items():
            current = self.remote_teams.get(name)
            if isinstance(current, MeshExecutor) and current.team == team and current.home == homes[name]:
                continue
            if current is not None and current.kind != KIND:
                continue  # an A2A team of this irisd's config keeps its name
            self.remote_teams.register(MeshExecutor(team, homes[name], self))

    def _forget_teams(self) -> None:
        for executor in self.remote_teams.all():
            if executor.kind == KIND:
                self.remote_teams.unregister(executor.team.name)

    def unreachable_words(self, home: str) -> str:
        if self.link is None or not self.link.state.connected:
            return f"the mesh is unreachable: {self.problem or 'reconnecting to NATS'}"
        if self.lane is None or not self.lane.connected:
            return f"the mesh is unreachable: {(self.lane.problem if self.lane else '') or 'reconnecting to NATS'}"
        return self.directory.unreachable_words(home) if self.directory is not None else ""

    def ended(self, tell_id: str, home: str) -> None:
        """Remote tell ``tell_id`` ended here on its home's final result, saved."""
        self._ended[tell_id] = home
        if len(self._ended) > RECENTLY_ENDED:
            del self._ended[next(iter(self._ended))]

    def chain_path(self, tell: RemoteTell) -> list[str]:
        mesh = self.config.mesh
        return path_out(tell.path, tell.from_team, mesh.name if mesh is not None else "")

    async def publish_tell(self, home: str, message: RemoteTellMsg | CancelMsg, report: TellReport | None) -> None:
        """Store ``message`` in IRIS_TELLS for ``home``; tries again until JetStream acks
        it (the tell's phase says why it waits). Cancellation stops trying.

        Nothing is handed to the NATS client while it is disconnected: it would keep the
        message and send it on reconnecting, so a tell failed "not sent" would run after
        all. Once a publish was made, ``report.sent()`` makes the tell's outcome the home's
        to settle (the same message id again is stored once, so trying on is harmless).

        A cancel has no message id: one that another irisd knew could be stored first
        under it, and this one dropped as its duplicate; a cancel twice is harmless."""
        from irisd.mesh.lane import LaneError

        headers: dict[str, str] | None = None
        if isinstance(message, RemoteTellMsg):
            headers = {"Nats-Msg-Id": message.id}
            await self.store.call(records.sending, message.id, home)
        payload = ENCODER.encode(message)
        sent = False
        while True:
            lane, mesh = self.lane, self.config.mesh
            if lane is not None and lane.connected and mesh is not None:
                if report is not None and not sent:
                    sent = True
                    await report.sent(lambda: unconfirmed(self.unreachable_words(home) or "no ack from the mesh yet"))
                try:
                    await lane.js_publish(tell_subject(home, mesh.name), payload, headers=headers)
                    return
                except LaneError as exc:
                    log.warning("mesh: tell not stored yet", extra={"error": str(exc)})
            if report is not None:
                words = self.unreachable_words(home) or "no answer from the mesh"
                report.phase(unconfirmed(words) if sent else f"waiting for the mesh to store it: {words}", queued=True)
            with trio.move_on_after(RETRY_S):
                await self._connected.wait()
                await trio.lowlevel.checkpoint()

    def _on_live(self, message: Message) -> None:
        """A live change of one of this irisd's remote tells, or the first copy of its
        final result, handed to the tell as the lane reads it (best effort: a final
        result comes again from IRIS_REPLIES)."""
        if (live := read(LIVE, message.data)) is not None:
            self._deliver_live(live, speaker(message.subject))

    def _deliver_live(self, live: LiveMsg | FinalMsg, sender: str) -> None:
        route = self.routes.get(live.id)
        if route is None:  # not running here (any more): a final result's stored copy settles it
            return
        if route.home != sender:
            log.warning("mesh: dropped a live message from an irisd that is not the tell's home",
                        extra={"from": sender, "tell": live.id, "home": route.home})
            return
        try:
            route.send.send_nowait(Delivery(live, trio.Event()))
        except trio.WouldBlock:  # its task is behind: a live change is best effort (LIVE_BACKLOG)
            if not route.dropped:
                route.dropped = True
                log.warning("mesh: a remote tell's live changes came faster than it read them; dropped some "
                            "(its final result is whole)", extra={"tell": live.id, "home": sender})

    async def _serve_replies(self, link: Link, lane: Lane,
                             *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Final results of this irisd's remote tells, durably: also after a restart."""
        from irisd.mesh.engine import REPLIES, durable_consumer, ensure_consumer
        from irisd.mesh.lane import ack, serve_pull

        name = link.mesh.name
        consumer = durable_consumer(f"caller-{name}", f"iris.reply.{name}.>")
        durable = await ensure_consumer(link, REPLIES, consumer)
        task_status.started()

        async def take(message: Message) -> None:
            final = read(FINAL, message.data)
            if final is None:
                ack(lane, message, b"+TERM")
                return
            await self._take_final(final, speaker(message.subject))
            ack(lane, message)  # once saved; a lost ack is a redelivery, saved once

        await serve_pull(lane, REPLIES, durable, take)

    async def _take_final(self, final: FinalMsg, sender: str) -> None:
        """A final result from irisd ``sender`` (the subject's, so its credentials'): taken
        only if that is the tell's home."""
        route = self.routes.get(final.id)
        if route is None and self._ended.get(final.id) == sender:
            del self._ended[final.id]  # ended here on its live copy, saved: nothing to do
            return
        home = route.home if route is not None else await self.store.call(records.home_of, final.id)
        if home != sender:
            log.warning("mesh: dropped a result from an irisd that is not the tell's home",
                        extra={"from": sender, "tell": final.id, "home": home})
            return
        if route is not None:
            delivery = Delivery(final, trio.Event())
            with trio.move_on_after(HANDLED_WAIT_S):
                await route.send.send(delivery)  # room behind the live changes: they are read at once
                await delivery.handled.wait()
            if delivery.handled.is_set():
                return
        info = await self.store.call(tells.get, final.id)
        # Only a tell no actor ended yet, or one this irisd's restart recorded interrupted.
        if info is None or (info.status not in UNFINISHED_TELL_STATUSES and info.status != "interrupted"):
            return
        if final.status not in FINAL_TELL_STATUSES:
            log.warning("mesh: dropped a final result that is not final", extra={"tell": final.id,
                                                                                  "status": final.status})
            return
        await end_late(self.store, info, final.status, final.text, final.error, final.cost_usd, hub=self.hub,
                       on_end=self.on_end)


async def _close(link: Link) -> None:
    """Close ``link`` even while cancelled, within 3 s."""
    with trio.CancelScope(shield=True), trio.move_on_after(3):
        await link.close()
