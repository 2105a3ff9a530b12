"""systemd integration without libsystemd: readiness, the watchdog, socket activation.

How it works
------------
systemd hands a service its part of the protocol in environment variables, read once
at start-up into :class:`SystemdEnv` and removed from ``os.environ`` (no child of
irisd ever sees them):

* ``NOTIFY_SOCKET``: a datagram socket (a path, or ``@name`` in the abstract
  namespace) that takes ``KEY=value`` lines: ``READY=1`` once irisd serves,
  ``STOPPING=1`` when it drains, ``WATCHDOG=1`` as a heartbeat, ``STATUS=...``.
* ``WATCHDOG_USEC`` (and ``WATCHDOG_PID``, if set, naming us): systemd kills and
  restarts irisd when no heartbeat arrives for that long. The heartbeat is a trio
  task, so a stalled event loop stops it and is caught.
* ``LISTEN_FDS`` / ``LISTEN_PID`` (socket activation): fds 3, 4, ... are listening
  sockets systemd opened for us; irisd serves the first one instead of binding.

Everything except :class:`Notifier`'s ``sendto`` and the two trio helpers at the end
is pure, so it is tested with plain dictionaries.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
from collections.abc import Mapping, MutableMapping

import msgspec
import trio

log = logging.getLogger("irisd.systemd")

LISTEN_FDS_START = 3  # SD_LISTEN_FDS_START: the first inherited fd
# The variables of the handshake; removed from irisd's environment once read.
HANDSHAKE_VARIABLES = (
    "NOTIFY_SOCKET",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
    "LISTEN_FDS",
    "LISTEN_PID",
    "LISTEN_FDNAMES",
)


class SystemdError(Exception):
    """systemd gave irisd something it cannot use (raised as SocketError by callers)."""


# --- reading the handshake (pure) ------------------------------------------------------


def notify_address(value: str | None) -> str | bytes | None:
    """The address to send notifications to: a path, or an abstract name ('@' -> NUL)."""
    if not value:
        return None
    if value.startswith("@"):
        return b"\0" + value[1:].encode()
    if value.startswith("/"):
        return value
    return None  # vsock: and other transports irisd has no use for


def _for_us(env: Mapping[str, str], key: str, pid: int) -> bool:
    """Variables with a ``*_PID`` companion are ours only if it names our pid."""
    owner = env.get(key)
    if owner is None:
        return True
    try:
        return int(owner) == pid
    except ValueError:
        return False


def watchdog_interval(env: Mapping[str, str], pid: int) -> float | None:
    """Seconds systemd waits for a heartbeat (``WATCHDOG_USEC``), None if off."""
    if not _for_us(env, "WATCHDOG_PID", pid):
        return None
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    return usec / 1_000_000 if usec > 0 else None


def listen_fds(env: Mapping[str, str], pid: int) -> int:
    """How many sockets systemd passed us (from fd 3 on); 0 without socket activation."""
    if "LISTEN_PID" not in env or not _for_us(env, "LISTEN_PID", pid):
        return 0
    try:
        count = int(env.get("LISTEN_FDS", ""))
    except ValueError:
        return 0
    return max(count, 0)


def notify_message(**fields: str | int) -> bytes:
    """``READY=1\\nSTATUS=...``: one line per field; a value never spans two lines."""
    lines = [f"{key}={str(value).replace(chr(10), ' ')}" for key, value in fields.items()]
    return "\n".join(lines).encode()


class SystemdEnv(msgspec.Struct, frozen=True):
    """What systemd told this irisd at start-up."""

    notify_socket: str | None = None
    watchdog_s: float | None = None
    listen_fds: int = 0

    @classmethod
    def from_env(cls, env: Mapping[str, str], pid: int) -> SystemdEnv:
        return cls(
            notify_socket=env.get("NOTIFY_SOCKET") or None,
            watchdog_s=watchdog_interval(env, pid),
            listen_fds=listen_fds(env, pid),
        )

    @classmethod
    def take(cls, environ: MutableMapping[str, str] | None = None) -> SystemdEnv:
        """Read the handshake from ``environ`` (default: ``os.environ``) and remove it, so
        nothing irisd starts can talk to systemd as if it were irisd."""
        environ = os.environ if environ is None else environ
        found = cls.from_env(environ, os.getpid())
        for key in HANDSHAKE_VARIABLES:
            environ.pop(key, None)
        return found


# --- sending ---------------------------------------------------------------------------


class Notifier:
    """Sends notifications to systemd; does nothing when irisd was not started by it.

    Sending never blocks and never raises: a missing or full notification socket must
    not take the daemon down (systemd notices the silence by itself).
    """

    def __init__(self, notify_socket: str | None) -> None:
        self.address = notify_address(notify_socket)
        self._sock: socket.socket | None = None
        self._warned = False
        if notify_socket and self.address is None:
            log.warning("unsupported NOTIFY_SOCKET, not notifying", extra={"notify_socket": notify_socket})

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, **fields: str | int) -> bool:
        if self.address is None:
            return False
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.sendto(notify_message(**fields), socket.MSG_DONTWAIT, self.address)
        except OSError as exc:
            if not self._warned:  # once: a dead NOTIFY_SOCKET would flood the log
                log.warning("cannot notify systemd", extra={"error": str(exc)})
                self._warned = True
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.send(READY=1, STATUS=status)

    def stopping(self, status: str) -> bool:
        return self.send(STOPPING=1, STATUS=status)

    def watchdog(self) -> bool:
        return self.send(WATCHDOG=1)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


async def serve_watchdog(
    notifier: Notifier, timeout_s: float, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Send ``WATCHDOG=1`` every ``timeout_s / 2`` seconds until cancelled.

    It runs on the event loop on purpose: if the loop stalls, the heartbeat stops and
    systemd restarts irisd.
    """
    task_status.started()
    while True:
        notifier.watchdog()
        await trio.sleep(timeout_s / 2)


# --- socket activation -----------------------------------------------------------------


def inherited_listener(fd: int = LISTEN_FDS_START) -> trio.SocketListener:
    """The listening Unix stream socket systemd passed as ``fd``, as a trio listener.

    Raises SystemdError when ``fd`` is not one (a unit with the wrong ListenStream=).
    """
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        raise SystemdError(f"LISTEN_FDS is set but fd {fd} is not open ({exc.strerror})") from None
    if not stat.S_ISSOCK(mode):
        raise SystemdError(f"LISTEN_FDS is set but fd {fd} is not a socket")
    sock = socket.socket(fileno=fd)
    if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
        sock.detach()  # not ours to close
        raise SystemdError(
            f"fd {fd} from systemd is not a Unix stream socket; use ListenStream=/path in irisd.socket"
        )
    if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        sock.detach()
        raise SystemdError(f"fd {fd} from systemd is not listening; check irisd.socket (Accept=no)")
    sock.set_inheritable(False)  # no claude child may get it
    sock.setblocking(False)
    return trio.SocketListener(trio.socket.from_stdlib_socket(sock))


def socket_path_of(listener: trio.SocketListener) -> str:
    """The filesystem path a listener is bound to ('' for an unnamed or abstract one)."""
    name = listener.socket.getsockname()
    return name if isinstance(name, str) else ""
