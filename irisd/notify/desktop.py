"""A desktop notification over D-Bus: the freedesktop Notifications service on the
session bus (what GNOME, KDE, dunst, mako... run), through jeepney's trio integration.

Best effort: no session bus (a server without a desktop), no service on it, or one
that does not answer in time is False, never an error; the other sinks still say it.
"""

from __future__ import annotations

import logging

import trio
from jeepney import DBusAddress, MessageType, new_method_call
from jeepney.io.trio import open_dbus_router

from irisd.notify.gate import Notice

log = logging.getLogger("irisd.notify")

SERVICE = DBusAddress("/org/freedesktop/Notifications", bus_name="org.freedesktop.Notifications",
                      interface="org.freedesktop.Notifications")
WITHIN_S = 5.0
URGENCY = {"info": 0, "warning": 1, "error": 2}  # the spec's low / normal / critical


async def notify(notice: Notice, bus: str) -> bool:
    """Show ``notice`` through the Notifications service on ``bus`` (an address such as
    ``unix:path=/run/user/1000/bus``); True once the service took it."""
    message = new_method_call(SERVICE, "Notify", "susssasa{sv}i", (
        "Iris", 0, "", notice.title, f"{notice.message}\n{notice.command}", [],
        {"urgency": ("y", URGENCY.get(notice.severity, 1)), "category": ("s", f"im.{notice.kind}")},
        -1,  # the server's default time on screen
    ))
    try:
        with trio.fail_after(WITHIN_S):
            async with open_dbus_router(bus) as router:
                reply = await router.send_and_get_reply(message)
    except (OSError, ValueError, KeyError, trio.TooSlowError) as exc:  # no bus there, a bad address, too slow
        log.info("no desktop notification", extra={"notice": notice.key, "error": f"{type(exc).__name__}: {exc}"})
        return False
    if reply.header.message_type == MessageType.error:
        log.info("no desktop notification", extra={"notice": notice.key, "error": str(reply.body)})
        return False
    return True
