"""The trio side of output no tell asked for: saves, announces and logs the pair's
``UnsolicitedTurn`` (``unsolicited.py``, pure). Owned and driven by the pair's actor,
which tells its process machine when a record holds the child or lets it go.
"""

from __future__ import annotations

import logging
import math
import time

from irisd.claude.spend import Spent
from irisd.claude.wire import AnyLine, line_type
from irisd.events import EventHub
from irisd.pool.unsolicited_turn import UnsolicitedTurn
from irisd.store import sessions, unsolicited
from irisd.store.facade import Store
from irisd.store.retry import PendingWrites
from irisd.tell import machine as tell_machine
from protocol.messages import UnsolicitedEvent, UnsolicitedInfo

log = logging.getLogger("irisd.pair")


class UnsolicitedKeeper:
    def __init__(
        self, *, from_team: str | None, to_team: str, label: str, store: Store, writes: PendingWrites,
        hub: EventHub | None,
    ) -> None:
        self.from_team, self.to_team, self.label = from_team, to_team, label
        self.store, self.writes, self.hub = store, writes, hub
        self.record: UnsolicitedTurn | None = None  # being recorded

    @property
    def holding(self) -> bool:
        """A turn of its own is under way: the pair's next tell waits for its end."""
        return self.record is not None and self.record.holding

    @property
    def holding_id(self) -> str:
        """The id of the record that holds the child ("" if none does)."""
        return self.record.id if self.record is not None and self.record.holding else ""

    def next_deadline(self) -> float:
        return self.record.next_deadline() if self.record is not None else math.inf

    async def line(
        self, line: AnyLine, raw: bytes, now: float, *, session_id: str, response_timeout_s: float,
        spent: Spent | None = None,
    ) -> None:
        """Keep a line no tell asked for: never dropped, never given to a tell (``spent``:
        what a result's turn cost)."""
        wall = time.time()
        record = self.record
        if record is None:
            record = self.record = UnsolicitedTurn(
                from_team=self.from_team,
                to_team=self.to_team,
                session_id=session_id,
                response_timeout_s=response_timeout_s,
                now=now,
                wall=wall,
            )
            log.warning("claude printed what no tell asked for", extra={"pair": self.label, "turn": record.id})
            await self.writes.save(None, unsolicited.save, record.info())
            self._announce(record.info())
        await self.writes.save(None, unsolicited.append_message, record.id, wall, line_type(line), raw)
        record.child_line(line, raw, now, spent)

    @property
    def ended(self) -> bool:
        """The record is over (quiet, or its turn timed out): ``end`` saves it."""
        return self.record is not None and self.record.ended

    def on_timer(self, now: float) -> list[tell_machine.Action]:
        """The record's timer: the actions of a turn gone silent (its ``StopChild``)."""
        return self.record.handle_timer(now, time.time()) if self.record is not None else []

    async def child_exited(self, now: float, detail: str) -> None:
        if self.record is not None:
            self.record.end(now, time.time(), f"claude exited before the turn's end: {detail}")
            await self.end()

    async def end(self) -> None:
        """Save and announce the record (closing it first if it still runs)."""
        if (record := self.record) is None:
            return
        if not record.ended:
            record.close(time.time())
        self.record = None
        info = record.info()
        log.warning(
            "claude ended what no tell asked for",
            extra={"pair": self.label, "turn": record.id, "status": info.status, "said": info.text[:200]},
        )
        await self.writes.save(None, unsolicited.save, info)
        if record.turns:
            await self.writes.save(None, sessions.record_turn, self.from_team, self.to_team, time.time())
        self._announce(info)

    async def abandon(self, now: float, reason: str) -> None:
        """irisd stops: a turn under way ends interrupted, saved directly (the pending
        writes had their last try)."""
        if (record := self.record) is None:
            return
        self.record = None
        record.end(now, time.time(), reason)
        try:
            await self.store.call(unsolicited.save, record.info())
        except Exception:
            log.exception("could not record an interrupted unsolicited turn", extra={"pair": self.label})

    def _announce(self, info: UnsolicitedInfo) -> None:
        if self.hub is not None:
            self.hub.publish(UnsolicitedEvent(turn=info), self.from_team, self.to_team)
