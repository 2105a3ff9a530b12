"""Tokens for outside A2A agents: one per agent, named, stored as SHA-256 digests in a 0600
JSON file under IRIS_HOME (``a2a-tokens.json``), revocable.

``iris a2a token --name NAME`` writes it (irisd need not run); irisd reads it again whenever
the file changed, so a revoked token stops working at its next request. The token itself is
shown once, when it is issued: the file only holds what verifies it.

An agent's name is who it is in Iris: its tells are sent as ``a2a:NAME`` (see
``sender_of``), which is how the ledger, ``iris report`` and the dashboard show it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import time
from pathlib import Path

import msgspec

from iris_common.owner_token import TOKEN_BYTES
from protocol.errors import ConfigError, InvalidRequestError, NotFoundError

log = logging.getLogger("irisd.a2a")

SENDER_PREFIX = "a2a:"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class AgentToken(msgspec.Struct, kw_only=True):
    name: str
    digest: str  # sha256 of the token, hex
    created_at: float


class _File(msgspec.Struct, kw_only=True):
    agents: list[AgentToken] = []


def tokens_file(home: Path) -> Path:
    return home / "a2a-tokens.json"


def sender_of(name: str) -> str:
    """The from_team an agent's tells carry."""
    return SENDER_PREFIX + name


def is_agent_sender(from_team: str | None) -> bool:
    return from_team is not None and from_team.startswith(SENDER_PREFIX)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def read(path: Path) -> list[AgentToken]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    try:
        return msgspec.json.decode(raw, type=_File).agents
    except msgspec.DecodeError as exc:
        raise ConfigError(
            f"{path} is not a valid A2A token file ({exc}); remove it and issue the tokens again"
        ) from None


def _write(path: Path, agents: list[AgentToken]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(json.dumps(msgspec.to_builtins(_File(agents=agents)), indent=1).encode() + b"\n")
    partial.replace(path)


def issue(path: Path, name: str, *, now: float | None = None) -> str:
    """A new token for agent ``name`` (replacing its old one); returns the token."""
    if not NAME_PATTERN.match(name):
        raise InvalidRequestError(
            f"{name!r} is not an agent name; use letters, digits, '.', '_' and '-' (up to 64), e.g. 'crm-bot'"
        )
    token = secrets.token_urlsafe(TOKEN_BYTES)
    kept = [a for a in read(path) if a.name != name]
    kept.append(AgentToken(name=name, digest=_digest(token), created_at=time.time() if now is None else now))
    _write(path, sorted(kept, key=lambda a: a.name))
    return token


def revoke(path: Path, name: str) -> None:
    agents = read(path)
    kept = [a for a in agents if a.name != name]
    if len(kept) == len(agents):
        known = ", ".join(a.name for a in agents) or "none"
        raise NotFoundError(f"no A2A token named {name!r}; issued: {known}")
    _write(path, kept)


class AgentTokens(msgspec.Struct, eq=False):
    """irisd's view of the file: re-read when its modification time or size changed."""

    path: Path
    _seen: tuple[int, int] | None = None
    _by_digest: dict[str, str] = msgspec.field(default_factory=dict)  # digest -> name

    def name_for(self, token: str) -> str | None:
        """The agent ``token`` belongs to, or None."""
        self._refresh()
        wanted = _digest(token)
        for digest, name in self._by_digest.items():
            if hmac.compare_digest(digest, wanted):
                return name
        return None

    def _refresh(self) -> None:
        try:
            info = self.path.stat()
            seen: tuple[int, int] | None = (info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            seen = None
        if seen == self._seen:
            return
        self._seen = seen
        try:
            agents = read(self.path) if seen is not None else []
        except ConfigError as exc:
            # A broken file grants nothing: agents get 401, and the owner reads why here
            # (the log, iris status, the dashboard), once per version of the file.
            log.error(f"A2A agents' tokens refused: {exc.message}")
            agents = []
        self._by_digest = {a.digest: a.name for a in agents}
