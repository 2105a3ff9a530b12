"""Desktop notifications over D-Bus (irisd/notify/desktop.py) against a session bus this
test starts (``dbus-daemon --session``) with a tiny org.freedesktop.Notifications service
on it, written with jeepney's blocking API in a thread. Real processes: the real clock."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
from jeepney import MessageType, message_bus, new_method_return
from jeepney.io.blocking import open_dbus_connection

from harness import wait_until
from iris_common.config import NotifyConfig
from irisd.events import EventHub
from irisd.notify import desktop
from irisd.notify.gate import Notice
from irisd.notify.service import Notifier

NOTICE = Notice(kind="approval", id="ap1", team="web", title="web asks to use Bash",
                message="external->web wants to run Bash: make", command="iris approve ap1", severity="warning")


@dataclass
class FakeNotifications:
    """Owns org.freedesktop.Notifications on the bus; records each Notify call's arguments."""

    address: str
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)

    def serve(self) -> None:
        with open_dbus_connection(self.address) as connection:
            connection.send_and_get_reply(message_bus.RequestName("org.freedesktop.Notifications"))
            self.ready.set()
            while not self.stop.is_set():
                try:
                    message = connection.receive(timeout=0.2)
                except TimeoutError:
                    continue
                if message.header.message_type == MessageType.method_call and \
                        message.header.fields.get(3) == "Notify":  # 3: the member header field
                    self.calls.append(message.body)
                    connection.send(new_method_return(message, "u", (len(self.calls),)))


@pytest.fixture
def session_bus() -> Iterator[str]:
    # A failure, not a skip: scripts/install installs the dbus package with the other test tools.
    assert shutil.which("dbus-daemon"), "no dbus-daemon on this machine: run scripts/install (it installs dbus)"
    daemon = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert daemon.stdout is not None
        yield daemon.stdout.readline().strip()
    finally:
        daemon.terminate()
        daemon.wait(10)
        if daemon.stdout is not None:
            daemon.stdout.close()


@pytest.fixture
def service(session_bus: str) -> Iterator[FakeNotifications]:
    fake = FakeNotifications(session_bus)
    thread = threading.Thread(target=fake.serve, daemon=True)
    thread.start()
    assert fake.ready.wait(10), "the fake notification service did not start"
    yield fake
    fake.stop.set()
    thread.join(10)


async def test_a_notice_becomes_a_desktop_notification_with_the_deciding_command(
    service: FakeNotifications,
) -> None:
    hub = EventHub()
    notifier = Notifier(settings=lambda: NotifyConfig(), hub=hub, desktop_bus=service.address)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(notifier.run)
            assert notifier.offer(NOTICE)
            assert not notifier.offer(NOTICE)  # said once
            await wait_until(lambda: service.calls, every=0.05)
            nursery.cancel_scope.cancel()
    hub.close()
    ((app, replaces, icon, summary, body, actions, hints, timeout),) = service.calls
    assert (app, replaces, icon, summary, actions, timeout) == ("Iris", 0, "", "web asks to use Bash", [], -1)
    assert body == "external->web wants to run Bash: make\niris approve ap1"
    assert hints["urgency"] == ("y", 1)


async def test_without_a_service_or_a_bus_it_is_false_not_an_error(session_bus: str) -> None:
    with trio.fail_after(30):
        assert await desktop.notify(NOTICE, session_bus) is False  # a bus, but no service on it
        assert await desktop.notify(NOTICE, "unix:path=/nonexistent/bus") is False


def test_settings_notify_desktop_false_or_no_bus_sends_nothing() -> None:
    off = Notifier(settings=lambda: NotifyConfig(desktop=False), hub=EventHub(), desktop_bus="unix:path=/x")
    assert not off.offer(NOTICE)
    nobus = Notifier(settings=lambda: NotifyConfig(), hub=EventHub(), desktop_bus="")
    assert not nobus.offer(NOTICE)
