"""``settings.mesh``: this irisd in a mesh of irisds on NATS JetStream (README "Teams on
many hosts").

::

    settings:
      mesh:
        url: nats://nats-1:4222          # or a list: [nats://a:4222, nats://b:4222]
        name: ws-1                       # this irisd in the mesh; default: the host name
        user: ws-1                       # credentials: user+password, token, or creds (a file)
        password: secret
        offer: [backend]                 # local teams the others may tell (default: all)
        allow: [ws-2]                    # irisds that may tell them (default: every one)

TLS is the URL's choice (``tls://``). Validation raises ConfigError naming the key and the
fix; ``check_mesh`` also checks ``offer`` against the configured teams.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Collection
from urllib.parse import urlsplit

import msgspec

from protocol.errors import ConfigError

TEAMS_BUCKET = "iris-teams"
HOMES_BUCKET = "iris-homes"
HEARTBEAT_S = 2.0  # how often a home says it is up
STALE_S = 8.0  # a home whose heartbeat (every 2 s) is this old is taken as unreachable
# A name is one token of a NATS subject and a KV key: no dots, no spaces, no wildcards.
IRISD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
SCHEMES = ("nats", "tls", "ws", "wss")


class MeshConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    url: str | list[str]
    name: str = ""
    user: str = ""
    password: str = ""
    token: str = ""
    creds: str = ""  # a NATS .creds file (JWT and nkey seed)
    offer: list[str] | None = None  # None: every local team
    allow: list[str] | None = None  # None: every irisd of the mesh


class Mesh(msgspec.Struct, frozen=True, kw_only=True):
    """The validated mesh settings, as irisd uses them."""

    servers: tuple[str, ...]
    name: str
    user: str = ""
    password: str = ""
    token: str = ""
    creds: str = ""
    offer: tuple[str, ...] | None = None
    allow: tuple[str, ...] | None = None

    def offers(self, team: str) -> bool:
        return self.offer is None or team in self.offer

    def allows(self, irisd: str) -> bool:
        return self.allow is None or irisd in self.allow


def default_name() -> str:
    """The host name, made a valid irisd name ("ws-1.lan" -> "ws-1")."""
    host = socket.gethostname().split(".")[0]
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "-", host).strip("-_")[:64]
    return cleaned or "irisd"


def check_mesh(mesh: MeshConfig, teams: Collection[str], source: str) -> Mesh:
    """Validate ``settings.mesh``; ConfigError with the fix."""
    where = f"{source}: key 'settings.mesh"
    urls = [mesh.url] if isinstance(mesh.url, str) else list(mesh.url)
    if not urls:
        raise ConfigError(f"{where}.url' is empty; give a NATS server such as nats://127.0.0.1:4222")
    for url in urls:
        parts = urlsplit(url.strip())
        if parts.scheme not in SCHEMES or not parts.hostname:
            raise ConfigError(
                f"{where}.url' has {url!r}; write a NATS server URL such as nats://127.0.0.1:4222 "
                f"(schemes: {', '.join(SCHEMES)}; tls:// for TLS)"
            )
    name = mesh.name.strip() or default_name()
    if not IRISD_NAME.match(name):
        raise ConfigError(
            f"{where}.name' is {mesh.name!r}; an irisd's name is ASCII letters, digits, '_' and '-' "
            "(no dots), at most 64 characters, e.g. ws-1"
        )
    if mesh.password and not mesh.user:
        raise ConfigError(f"{where}.password' is given without 'user'; add settings.mesh.user")
    if mesh.user and not mesh.password:
        raise ConfigError(f"{where}.user' is given without 'password'; add settings.mesh.password")
    given = [key for key, value in (("user", mesh.user), ("token", mesh.token), ("creds", mesh.creds)) if value]
    if len(given) > 1:
        raise ConfigError(
            f"{where}' gives {' and '.join(given)}; a connection has one kind of credentials, keep one"
        )
    creds = os.path.expanduser(mesh.creds) if mesh.creds else ""
    if creds and not os.path.isfile(creds):
        raise ConfigError(f"{where}.creds' is {mesh.creds!r}, which is not a file; give the path of a .creds file")
    for index, team in enumerate(mesh.offer or ()):
        if team not in teams:
            known = ", ".join(sorted(teams)) or "(none)"
            raise ConfigError(
                f"{where}.offer[{index}]' names {team!r}, which is not a team of this irisd; known: {known}"
            )
    for index, irisd in enumerate(mesh.allow or ()):
        if not IRISD_NAME.match(irisd):
            raise ConfigError(f"{where}.allow[{index}]' is {irisd!r}, which is not an irisd's name (e.g. ws-2)")
    return Mesh(
        servers=tuple(url.strip() for url in urls),
        name=name,
        user=mesh.user,
        password=mesh.password,
        token=mesh.token,
        creds=creds,
        offer=tuple(mesh.offer) if mesh.offer is not None else None,
        allow=tuple(mesh.allow) if mesh.allow is not None else None,
    )


def is_mesh_sender(name: str) -> bool:
    """A sender ``team@irisd``: a team of another irisd of the mesh (no local team has '@')."""
    return "@" in name


# --- the directory's entries (written by irisd, read by irisd and the CLI) -------------


class HomeEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An irisd's heartbeat in ``iris-homes``."""

    name: str
    teams: list[str] = []
    up: bool = True
    seen_at: float = 0.0  # the home's wall clock at its last heartbeat
    started_at: float = 0.0
    version: str = ""
    host: str = ""
    pid: int = 0
    pid_namespace: str = ""  # "pid:[N]" on Linux: a pid means a process only within its namespace
    server_at: float = 0.0  # the NATS server's clock for that heartbeat (set on reading)

    @property
    def skew_s(self) -> float | None:
        """How far the home's clock is ahead of the server's (None: unknown)."""
        return self.seen_at - self.server_at if self.server_at and self.seen_at else None


class TeamEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A home's claim of a team in ``iris-teams``, under the key ``<home>.<team>``
    (``claim_key``): each irisd writes only keys of its own name, which the NATS
    permissions bind to its credentials (README "Teams on many hosts")."""

    name: str
    home: str
    description: str = ""
    color: str = ""


def claim_key(home: str, team: str) -> str:
    """The key of ``home``'s claim of ``team`` in ``iris-teams`` (a home's name has no dots)."""
    return f"{home}.{team}"


def read_claim(key: str, value: bytes) -> TeamEntry | None:
    """The claim stored under ``key``, or None for one that is not a home's own: not
    Iris's, or naming another home or team than its key does (the key is what the
    server's permissions bind to the writer; the value says nothing on its own)."""
    home, _, team = key.partition(".")
    try:
        entry = msgspec.json.decode(value, type=TeamEntry)
    except msgspec.DecodeError:
        return None
    return entry if team and (entry.home, entry.name) == (home, team) else None


def team_homes(claims: dict[str, tuple[int, TeamEntry]]) -> dict[str, TeamEntry]:
    """team -> its one home, from the claims (key -> (revision, claim)) in ``iris-teams``:
    of several homes claiming a name, the earliest live claim (lowest revision) holds it.
    A home never rewrites a claim another home contests, so a later claim cannot take
    a name over."""
    first: dict[str, tuple[int, TeamEntry]] = {}
    for revision, entry in claims.values():
        held = first.get(entry.name)
        if held is None or revision < held[0]:
            first[entry.name] = (revision, entry)
    return {name: entry for name, (_, entry) in first.items()}


class FirstReading:
    """Whether a bucket's watch has delivered every value the bucket held as it began.

    nats-py marks that moment with a None update, and may send it before the values: it
    goes by the watch consumer's pending count, which the server can give as 0 while the
    values are still on their way (under load `iris mesh status` once listed no team).
    Each entry's own ``delta`` (the values after it, counted as the server sent it) is
    exact; the marker is believed only for a bucket that holds nothing."""

    def __init__(self) -> None:
        self.done = False

    def entry(self, delta: int | None) -> bool:
        """An entry came; True when it ends the first reading."""
        return self._end(delta == 0)

    def marker(self, held: int) -> bool:
        """nats-py's marker came while the bucket held ``held`` values; True when it ends
        the first reading."""
        return self._end(held == 0)

    def _end(self, last: bool) -> bool:
        if self.done or not last:
            return False
        self.done = True
        return True


def permission_refused(words: str) -> bool:
    """Whether an error of the NATS client says the server refused a permission (the
    request it was for is then never answered)."""
    return "permissions violation" in words.lower()


def permission_words(mesh: Mesh) -> tuple[str, str]:
    """Who the NATS server refused a permission (this irisd's user), and the fix."""
    who = f"user `{mesh.user}`" if mesh.user else "this irisd's credentials"
    return who, f"give {who} the permissions of the template in README 'Teams on many hosts'"


def inbox_prefix(name: str) -> str:
    """The inboxes (replies to requests, pulled messages) of irisd ``name``: under its own
    name, so the permissions let only its credentials subscribe to them."""
    return f"_INBOX.{name}"


def reachable(home: HomeEntry | None, now: float) -> bool:
    return home is not None and home.up and now - home.seen_at < STALE_S


def unreachable_words(name: str, home: HomeEntry | None, now: float) -> str:
    """'home irisd `ws-2` unreachable since 14:02:11' ("" when it is reachable)."""
    if reachable(home, now):
        return ""
    if home is None or not home.seen_at:
        return f"home irisd `{name}` unreachable (it never joined the mesh)"
    since = time.strftime("%H:%M:%S", time.localtime(home.seen_at))
    how = "stopped" if not home.up else "unreachable"
    return f"home irisd `{name}` {how} since {since}"
