"""The HTTP face's checks, without I/O: Host and Origin allowlists (DNS rebinding,
cross-site requests), where a token comes from, and the limiter of failed logins. The
middleware that applies them is gate.py.

Why each check (the MCP spec's security notes, CVE-2025-66416 and the like):

* **Host.** A web page on evil.example can make the browser resolve evil.example to
  127.0.0.1 (DNS rebinding) and then talk to irisd as a "same-origin" page. Its
  requests still carry ``Host: evil.example:PORT``, so only the names irisd is really
  reached by are accepted: 127.0.0.1, localhost, [::1] (and ``httpHost``) with its port.
* **Origin.** A browser names the page a request comes from. Any Origin that is not
  irisd itself is refused (403), also on WebSocket upgrades, which browsers do not
  guard with CORS. No response ever carries ``Access-Control-Allow-Origin``.
* **Token.** Everything but ``/health`` needs the owner's token (``Authorization:
  Bearer``, or the login cookie the browser got from ``/login``) or a child's token.
* **Failed authentications** are counted per client address; past the limit, further
  failures get 429 until the window has passed. A VALID token is still served then, so
  that nobody on the machine can lock the owner or irisd's children out by failing on
  purpose; tokens have 256 bits, so the limit is about noise, not about guessing.
"""

from __future__ import annotations

import collections
import functools
import ipaddress

import msgspec

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MAX_AUTH_FAILURES = 20  # per client address, within the window
AUTH_FAILURE_WINDOW_S = 60.0
MAX_TRACKED_ADDRESSES = 10_000  # past it (a flood from many addresses), the longest-known are forgotten


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """``host`` as it appears in a URL (IPv6 addresses in brackets)."""
    bare = host.strip("[]")
    try:
        if ipaddress.ip_address(bare).version == 6:
            return f"[{bare}]"
    except ValueError:
        pass
    return host


def host_names(bind_host: str) -> tuple[str, ...]:
    """The names a client may use for irisd: loopback always (children use it), and the
    configured host when it is a specific address or name."""
    names = list(LOOPBACK_NAMES)
    if bind_host not in ("0.0.0.0", "::", "") and url_host(bind_host) not in names:
        names.append(url_host(bind_host))
    return tuple(names)


class Allowlist(msgspec.Struct, frozen=True, dict=True):
    """The Host header values and Origins that are irisd itself."""

    names: tuple[str, ...]
    port: int

    @functools.cached_property
    def hosts(self) -> frozenset[str]:
        return frozenset(f"{name}:{self.port}" for name in self.names)

    @functools.cached_property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.hosts)

    def host_ok(self, host: str | None) -> bool:
        return host is not None and host.lower() in self.hosts

    def origin_ok(self, origin: str | None) -> bool:
        """No Origin (curl, claude, scripts) is fine; a browser's must be irisd's own."""
        return origin is None or origin.lower() in self.origins


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer T`` header (None if absent or another scheme)."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip()


class FailedAuthLimiter(msgspec.Struct):
    """Failed authentications per client address in a sliding window; time is an argument."""

    max_failures: int = MAX_AUTH_FAILURES
    window_s: float = AUTH_FAILURE_WINDOW_S
    max_addresses: int = MAX_TRACKED_ADDRESSES
    _failures: dict[str, collections.deque[float]] = msgspec.field(default_factory=dict)

    def limited(self, client: str, now: float) -> bool:
        """True while ``client`` has failed too often recently."""
        return len(self._recent(client, now)) >= self.max_failures

    def failed(self, client: str, now: float) -> None:
        self._recent(client, now).append(now)

    def retry_after(self, client: str, now: float) -> float:
        recent = self._recent(client, now)
        return max(0.0, recent[0] + self.window_s - now) if recent else 0.0

    def _recent(self, client: str, now: float) -> collections.deque[float]:
        if len(self._failures) > 1000:  # many addresses (IPv6): forget the quiet ones
            self._forget_idle(now)
        while len(self._failures) >= self.max_addresses and client not in self._failures:
            del self._failures[next(iter(self._failures))]  # bounded: the first seen go first
        found = self._failures.setdefault(client, collections.deque())
        while found and found[0] <= now - self.window_s:
            found.popleft()
        if len(found) > self.max_failures:  # keep memory bounded under a flood
            for _ in range(len(found) - self.max_failures):
                found.popleft()
        return found

    def _forget_idle(self, now: float) -> None:
        for key in [k for k, v in self._failures.items() if not v or v[-1] <= now - self.window_s]:
            del self._failures[key]
