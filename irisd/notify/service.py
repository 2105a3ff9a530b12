"""The notifier's trio side: it watches the event hub for new approvals and questions,
takes the health monitor's findings (``on_findings``), lets the gate decide what goes
out (``irisd/notify/gate.py``) and delivers each notice to every sink configured
(``settings.notify.webhook``; a desktop notification over D-Bus where irisd has a
session bus and ``settings.notify.desktop``), a few at a time, each retried with backoff.

Bounded everywhere: at most ``QUEUE`` notices wait (more are dropped and counted), at
most ``PARALLEL`` deliveries run at once. Cancellation stops the watch and every
delivery under way.

The HTTP client (and the TLS context it reads the CA files for) is made when the first
webhook notice goes out, not at start: most irisds have no webhook, and httpx2 with its
TLS set-up was about a tenth of irisd's start-up CPU. The D-Bus client (jeepney) is
loaded with the first desktop notice, for the same reason.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import trio

from iris_common.config import NotifyConfig
from irisd.events import EventHub
from irisd.notify import webhook
from irisd.notify.gate import Notice, NoticeGate, of_approval, of_findings, of_question
from protocol.health import Finding
from protocol.messages import ApprovalEvent, QuestionEvent

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("irisd.notify")

QUEUE = 100
PARALLEL = 4

Sink = Callable[[Notice], Awaitable[bool]]


class Notifier:
    def __init__(
        self,
        *,
        settings: Callable[[], NotifyConfig],
        hub: EventHub,
        transport: httpx2.AsyncBaseTransport | None = None,
        desktop_bus: str | None = None,
    ) -> None:
        self.settings = settings  # read at each notice: a reload applies at once
        self.hub = hub
        self._transport = transport  # tests: an in-process receiver
        # The session bus of the person's desktop, if irisd runs in one (a systemd user
        # service does); "" is none: no desktop notifications.
        self.desktop_bus = os.environ.get("DBUS_SESSION_BUS_ADDRESS", "") if desktop_bus is None else desktop_bus
        self.gate = NoticeGate(every_s=NotifyConfig().every / 1000)  # its every_s follows the settings
        self._send, self._receive = trio.open_memory_channel[Notice](QUEUE)
        self.delivered = 0
        self.failed = 0
        self.dropped = 0
        self._client: httpx2.AsyncClient | None = None
        self._client_lock = trio.Lock()

    def on_findings(self, findings: list[Finding]) -> None:
        """The health monitor checked: its warnings and errors are offered."""
        for notice in of_findings(findings):
            self.offer(notice)

    def offer(self, notice: Notice) -> bool:
        """Queue ``notice`` if the gate lets it through (never blocks)."""
        if not self.settings().webhook and not self._desktop():
            return False  # nowhere to say it
        self.gate.every_s = self.settings().every / 1000
        if not self.gate.admit(notice, trio.current_time()):
            return False
        try:
            self._send.send_nowait(notice)
        except trio.WouldBlock:
            self.dropped += 1
            log.warning("too many notices waiting; one is dropped", extra={"notice": notice.key})
            return False
        return True

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Watch and deliver until cancelled."""
        async with AsyncExitStack() as clients, trio.open_nursery() as nursery:
            nursery.start_soon(self._watch)
            limiter = trio.CapacityLimiter(PARALLEL)
            task_status.started()
            async for notice in self._receive:
                await limiter.acquire_on_behalf_of(notice)
                nursery.start_soon(self._deliver, clients, notice, limiter)

    async def _webhook_client(self, clients: AsyncExitStack) -> httpx2.AsyncClient:
        """The one client of the webhook deliveries, made at the first (closed with ``clients``)."""
        async with self._client_lock:
            if self._client is None:
                import ssl

                import httpx2

                tls: ssl.SSLContext | bool = True
                if self._transport is None:  # reads the CA files: not on the loop
                    tls = await trio.to_thread.run_sync(ssl.create_default_context)
                self._client = await clients.enter_async_context(
                    httpx2.AsyncClient(transport=self._transport, follow_redirects=True, verify=tls))
            return self._client

    def _desktop(self) -> bool:
        return bool(self.desktop_bus) and self.settings().desktop

    async def _deliver(self, clients: AsyncExitStack, notice: Notice, limiter: trio.CapacityLimiter) -> None:
        try:
            if self._desktop():
                from irisd.notify import desktop  # jeepney: only where there is a desktop to notify

                await desktop.notify(notice, self.desktop_bus)
            url = self.settings().webhook
            if url and await webhook.post(await self._webhook_client(clients), url, notice):
                self.delivered += 1
            elif url:
                self.failed += 1
        finally:
            limiter.release_on_behalf_of(notice)

    async def _watch(self) -> None:
        """New approvals and questions, from the hub (subscribed again if it dropped us)."""
        while not self.hub.closed:
            with self.hub.subscribe_kinds(ApprovalEvent, QuestionEvent) as events:
                while batch := await events.wait_batch():
                    for event in batch:
                        match event:
                            case ApprovalEvent(approval=approval) if approval.status == "pending":
                                self.offer(of_approval(approval))
                            case QuestionEvent(question=question) if question.status == "pending":
                                self.offer(of_question(question))
            await trio.sleep(1.0)  # dropped for falling behind: look again shortly
