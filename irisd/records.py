"""What irisd keeps, read on request: tells (``iris report``, ``iris tells``), their
transcripts, unsolicited turns, notifications, questions, approvals and their remembered
rules, and costs. Each read checks the team it names against the current config (a team
removed from config.yaml keeps its history, so a read that finds rows answers)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import msgspec

from irisd.config_holder import ConfigHolder
from irisd.events import SendEvent
from irisd.store import agent, approvals, ledger, lines, notifications, questions, stats, tells, unsolicited
from irisd.store.facade import Store
from irisd.tell.service import TellService
from irisd.tell.transcript import Line, not_stored
from protocol.errors import NotFoundError, UnknownTeamError
from protocol.messages import (
    AgentStats,
    AgentStatsReply,
    ApprovalsReply,
    Costs,
    CostsReply,
    Event,
    ListApprovals,
    ListNotifications,
    ListQuestions,
    ListRules,
    ListTells,
    NotificationsReply,
    QuestionsReply,
    ReadTranscript,
    ReadUnsolicited,
    Report,
    ReportReply,
    RuleReply,
    RulesReply,
    SessionStats,
    SessionStatsReply,
    TranscriptPage,
    TranscriptReply,
    UnsolicitedReply,
)
from protocol.transcript import StepReader, entries, join


class Records:
    def __init__(self, *, current: ConfigHolder, store: Store, tells: TellService) -> None:
        self.current = current
        self.store = store
        self.tells = tells  # a running tell's live state beside its row

    async def report(self, request: Report) -> ReportReply:
        self.current.check_from(request.from_team)
        found = await self.store.read(
            tells.recent, request.to_team, request.from_team, all_callers=request.all_callers, limit=request.limit
        )
        if not found:
            try:
                self.current.check_team(request.to_team)
            except UnknownTeamError:  # a team removed from config.yaml keeps its history
                if not await self.store.call(tells.recent, request.to_team, None, all_callers=True, limit=1):
                    raise
        return ReportReply(tells=[self.tells.live(info) for info in found])

    async def list_tells(self, request: ListTells) -> ReportReply:
        if request.to_team is not None:
            self.current.check_team(request.to_team)
        if request.from_team not in (None, "external"):
            self.current.check_from(request.from_team)
        found = await self.store.read(tells.recent_all, request.to_team, request.from_team, request.status,
                                      request.limit)
        return ReportReply(tells=[self.tells.live(info) for info in found])

    async def transcript(self, request: ReadTranscript, send_event: SendEvent) -> TranscriptReply:
        """A tell's lines (or with ``steps`` its steps, ``protocol.transcript``) as
        ``TranscriptPage`` events (``_send_lines``), then the reply with the tell as it is once
        they are sent. Unpaged: the same pages, joined into the reply here. NotFoundError
        before any page for an unknown tell."""
        if not request.paged:
            paged = msgspec.structs.replace(request, paged=True)
            pages, last = await _gathered(lambda keep: self.transcript(paged, keep))
            return join(pages, last)
        await self.tells.find(request.tell_id)
        reader = StepReader() if request.steps else None

        async def send(page: lines.Page) -> None:
            if reader is None:
                await send_event(_page(page, request.packed))
            elif found := reader.feed(page.entries()):
                await send_event(TranscriptPage(steps=found))

        tell_id = request.tell_id
        await self._send_lines(lines.TELLS, tell_id, send, lambda: self.tells.unwritten(tell_id))
        info = await self.tells.find(request.tell_id)
        if reader is not None and (rest := reader.finish(info)):
            await send_event(TranscriptPage(steps=rest))
        return TranscriptReply(tell=info, entries=[])

    async def unsolicited_transcript(self, request: ReadUnsolicited, send_event: SendEvent) -> UnsolicitedReply:
        """An unsolicited turn's lines, paged as a tell's (``transcript``)."""
        if not request.paged:
            paged = msgspec.structs.replace(request, paged=True)
            pages, reply = await _gathered(lambda keep: self.unsolicited_transcript(paged, keep))
            return msgspec.structs.replace(reply, entries=[entry for page in pages for entry in entries(page)])
        turn = await self.store.call(unsolicited.get, request.turn_id)
        if turn is None:
            raise NotFoundError(f"no unsolicited turn with id {request.turn_id!r}; 'iris status' lists recent ones")

        async def send(page: lines.Page) -> None:
            await send_event(_page(page, request.packed))

        await self._send_lines(lines.UNSOLICITED, request.turn_id, send, list)
        return UnsolicitedReply(turn=turn, entries=[])

    async def _send_lines(
        self, table: tuple[str, str], owner: str, send: SendLines, unwritten: Callable[[], list[Line]]
    ) -> None:
        """Hand ``owner``'s lines stored in ``table`` to ``send`` in order, a page at a time
        (``lines.page``), each page sent before the next is read: a slow reader
        holds the reading, not irisd's memory. A page is small, so it is read on the event loop
        (``Store.call``): a hop to the worker thread per page cost more than the read, and far
        more on a busy machine. After the last stored page, with no wait in between, the lines
        ``unwritten`` still holds in memory (a running tell's), less those stored by then.
        Cancellation: between pages."""
        after = (0, 0)
        last: lines.Page | None = None
        while True:
            page = await self.store.call(lines.page, table, owner, after)
            held = [] if page.full else unwritten()  # agrees with the page: no wait since it was read
            if page.line_count:
                await send(page)
                last = page
            if page.full:
                after = page.cursor
                continue
            if held:  # less those stored by the time the page was read (a write not marked done yet)
                stored = [(entry.at, entry.type) for entry in (last.entries() if last else [])[-len(held):]]
                if more := not_stored(stored, held):
                    await send(lines.packed(more))
            return

    async def notifications(self, request: ListNotifications) -> NotificationsReply:
        if request.to_team is not None:
            self.current.check_team(request.to_team)
        found = await self.store.call(notifications.listing, request.to_team, request.include_done)
        return NotificationsReply(notifications=found)

    async def questions(self, request: ListQuestions) -> QuestionsReply:
        if request.team is not None and self.current.remote_teams.get(request.team) is None:
            self.current.check_from(request.team)  # asked by or of it: a sender ('a2a:NAME') is one too
        asked = await self.store.call(questions.listing, request.team, request.include_closed, request.for_team)
        return QuestionsReply(questions=asked)

    async def approvals(self, request: ListApprovals) -> ApprovalsReply:
        if request.team is not None:
            self.current.check_team(request.team)
        listed = await self.store.call(approvals.listing, request.team, request.include_decided)
        return ApprovalsReply(approvals=listed)

    async def rules(self, request: ListRules) -> RulesReply:
        if request.team is not None:
            self.current.check_team(request.team)
        return RulesReply(rules=await self.store.call(approvals.rules, request.team))

    async def forget_rule(self, rule_id: str) -> RuleReply:
        rule = await self.store.call(approvals.forget, rule_id)
        if rule is None:
            raise NotFoundError(f"no remembered rule {rule_id}; 'iris approvals rules' lists them")
        return RuleReply(rule=rule)

    async def costs(self, request: Costs) -> CostsReply:
        found, total = await self.store.read(ledger.summary, request.by, request.since, request.team)
        if request.team is not None and not found:  # a removed team's costs still count
            self.current.check_team(request.team)
        return CostsReply(by=request.by, since=request.since, rows=found, total=total)

    async def session_stats(self, request: SessionStats) -> SessionStatsReply:
        """Each pair's figures and its tells and cost per day (irisd/store/stats.py)."""
        pairs, days = await self.store.read(stats.report, request.since, request.team)
        if request.team is not None and not pairs:  # a removed team's figures still show
            self.current.check_team(request.team)
        return SessionStatsReply(pairs=pairs, days=days)

    async def agent_stats(self, request: AgentStats) -> AgentStatsReply:
        """What iris-agent found, proposed and cost (irisd/store/agent.py)."""
        return await self.store.read(agent.stats, request.since)


SendLines = Callable[[lines.Page], Awaitable[None]]  # a page of a transcript to its reader


def _page(page: lines.Page, packed: bool) -> TranscriptPage:
    """A page of lines as the reader asked for it: ``packed`` as stored (never decoded here), or decoded."""
    return TranscriptPage(packed=page.packed) if packed else TranscriptPage(entries=page.entries())


R = TypeVar("R")


async def _gathered(read: Callable[[SendEvent], Awaitable[R]]) -> tuple[list[TranscriptPage], R]:
    """A paged read's pages and reply, for an unpaged request (joined by the caller)."""
    pages: list[TranscriptPage] = []

    async def keep(event: Event) -> None:
        assert isinstance(event, TranscriptPage)
        pages.append(event)

    last = await read(keep)
    return pages, last
