"""What a person does to pairs, on request: look at one, wake it, put it to sleep, wake a
team's every pair, clear a pair's finished tells, and its conversation (``iris sessions``:
list, archive, restore, reset). The pairs themselves are the supervisor's
(irisd/pool/supervisor.py); archiving is the archiver's (irisd/pool/archiver.py)."""

from __future__ import annotations

import time

import msgspec
import trio

from iris_common.paths import IrisPaths, existing, transcript_path
from irisd.config_holder import ConfigHolder
from irisd.pool.archiver import Archiver
from irisd.pool.pair import Pair
from irisd.pool.supervisor import Supervisor
from irisd.store import ledger, sessions, tells, unsolicited
from irisd.store.facade import Store
from irisd.tell.service import not_here
from protocol.errors import InvalidRequestError, NotFoundError
from protocol.messages import (
    ClearCache,
    CountReply,
    PairReply,
    PairsReply,
    SessionInfo,
    SessionReply,
    SessionsReply,
    Sleep,
    Wake,
    WakeAll,
)
from protocol.pairs import pair_label


class Pairs:
    def __init__(
        self, *, current: ConfigHolder, paths: IrisPaths, store: Store, supervisor: Supervisor, archiver: Archiver
    ) -> None:
        self.current = current
        self.paths = paths
        self.store = store
        self.supervisor = supervisor
        self.archiver = archiver

    async def pair(self, from_team: str | None, to_team: str, thread: str = "") -> Pair:
        self.current.check_team(to_team)  # UnknownTeamError, with the known teams
        self.current.check_from(from_team)
        return await self.supervisor.pair(from_team, to_team, thread)  # refuses a remote team

    async def get(self, from_team: str | None, to_team: str, thread: str = "") -> PairReply:
        return PairReply(process=(await self.pair(from_team, to_team, thread)).statistics())

    async def wake(self, request: Wake) -> PairReply:
        pair = await self.pair(request.from_team, request.to_team, request.thread)
        message = f"{pair.label} is still starting (it may be waiting for a free process slot)"
        with trio.move_on_after(self.current.config.settings.session_init_timeout / 1000):
            message = await pair.wake()
        return PairReply(process=pair.statistics(), message=message)

    async def sleep(self, request: Sleep) -> PairReply:
        pair = await self.pair(request.from_team, request.to_team, request.thread)
        message = await pair.sleep(force=request.force, reason="put to sleep on request")
        return PairReply(process=pair.statistics(), message=message)

    async def wake_all(self, request: WakeAll) -> PairsReply:
        self.current.check_from(request.from_team)
        errors = await self.supervisor.wake_all(request.from_team, parallel=request.parallel)
        config, remote_teams = self.current.config, self.current.remote_teams
        wanted = [  # not the stopped pairs of a team a reload removed
            p for p in self.supervisor.statistics()
            if p.from_team == request.from_team and (p.to_team in config.teams or remote_teams.get(p.to_team))
        ]
        return PairsReply(processes=wanted, errors=errors)

    def _kept_here(self, team: str) -> None:
        """Refuse a remote team: its conversations are kept where it lives."""
        if (remote := self.current.remote_teams.get(team)) is not None:
            raise not_here(team, remote, "its conversations are kept where it lives, not here")

    async def clear_cache(self, request: ClearCache) -> CountReply:
        self._kept_here(request.to_team)
        self.current.config.team(request.to_team)
        self.current.check_from(request.from_team)
        count = await self.store.call(tells.clear_finished, request.to_team, request.from_team)
        count += await self.store.call(unsolicited.clear_finished, request.to_team, request.from_team)
        return CountReply(count=count)

    # --- conversations ---------------------------------------------------------------------

    async def list_sessions(self, to_team: str | None, *, archived: bool = False) -> SessionsReply:
        return SessionsReply(sessions=await self.sessions(to_team, archived=archived))

    async def sessions(self, to_team: str | None, *, archived: bool | None = None) -> list[SessionInfo]:
        """The pairs' conversations (with ``to_team``): the archived ones only, the others
        only, or (None) all."""
        if to_team is not None:
            self.current.check_team(to_team)
        config = self.current.config
        found_rows = [r for r in await self.store.call(sessions.list_all) if to_team in (None, r.to_team)
                      and archived in (None, r.status == sessions.ARCHIVED)]
        costs = await self.store.read(ledger.by_pair)
        files = [transcript_path(self.paths, config.teams, r.to_team, r.session_id) for r in found_rows]
        remote = {name for name, team in config.teams.items() if team.host}
        found = []
        for row, transcript in zip(found_rows, await trio.to_thread.run_sync(existing, files), strict=True):
            live = self.supervisor.snapshot(row.key)
            found.append(
                msgspec.structs.replace(
                    sessions.info(row),
                    process_state=live.process.state if live else "stopped",
                    # A remote team's transcript is on its host: checked there when it resumes.
                    transcript_exists=transcript or row.to_team in remote,
                    cost_usd=costs.get(row.key, 0.0),
                )
            )
        return found

    async def archive_session(self, from_team: str | None, to_team: str, thread: str = "") -> SessionReply:
        """Archive the conversation of the pair (or its thread) now (refused while it has work)."""
        self._kept_here(to_team)
        self.current.check_team(to_team)
        self.current.check_from(from_team)
        await self.archiver.archive((from_team, to_team, thread), time.time(), why="by hand ('iris session archive')")
        return SessionReply(session=await self._session(from_team, to_team, thread))

    async def restore_session(self, from_team: str | None, to_team: str, thread: str = "") -> SessionReply:
        """Restore an archived conversation (a new one with settings.sessions.restore: fresh)."""
        self._kept_here(to_team)
        self.current.check_team(to_team)
        self.current.check_from(from_team)
        fresh = self.current.config.settings.sessions.restore == "fresh"
        restored = await self.archiver.restore((from_team, to_team, thread), time.time(), fresh=fresh,
                                               why="by hand ('iris session restore')")
        if restored is None:
            label = pair_label(from_team, to_team, thread)
            raise InvalidRequestError(f"the conversation of {label} is not archived; 'iris sessions --archived' "
                                      "lists those that are")
        return SessionReply(session=await self._session(from_team, to_team, thread))

    async def reset_session(self, from_team: str | None, to_team: str, thread: str = "") -> SessionReply:
        pair = await self.pair(from_team, to_team, thread)
        await pair.reset()
        for info in await self.sessions(to_team):
            if info.from_team == from_team and info.thread == thread:
                return SessionReply(session=info)
        raise NotFoundError(f"no session for {pair.label}")  # pragma: no cover - reset creates it

    async def _session(self, from_team: str | None, to_team: str, thread: str = "") -> SessionInfo:
        for info in await self.sessions(to_team):
            if info.from_team == from_team and info.thread == thread:
                return info
        raise NotFoundError(
            f"{pair_label(from_team, to_team, thread)} has no conversation yet; 'iris sessions' lists them"
        )
