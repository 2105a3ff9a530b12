"""Tokens of the HTTP face: the owner's (a 0600 file under IRIS_HOME, rotatable), the
login cookie derived from it, one per claude child (in memory only, minted at its
spawn and revoked at its exit), and those of outside A2A agents (a file, see
iris_common/a2a_tokens.py; they open the A2A face only). No HTTP code here: the pool
mints child tokens through ``Access.grant_child`` without importing the web stack.

A child gets its token in a 0600 ``--mcp-config`` FILE, never in its argv: anyone on
the machine can read ``/proc/PID/cmdline``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from iris_common.a2a_tokens import AgentTokens, tokens_file
from iris_common.owner_token import TOKEN_BYTES, load_or_create_owner_token, token_file, write_owner_token
from irisd.caller import OWNER, Caller
from protocol.messages import HttpInfo, HttpInfoReply

log = logging.getLogger("irisd.http")

COOKIE_NAME = "iris_session"
LOGIN_CODE_TTL_S = 120.0


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ChildGrant(msgspec.Struct, eq=False):
    """A child's token and its 0600 MCP config file; ``revoke`` ends both."""

    token: str
    path: Path
    access: Access

    def revoke(self) -> None:
        self.access.revoke(self.token)
        with contextlib.suppress(OSError):
            self.path.unlink()

    def rebind(self, caller: Caller) -> None:
        """The token now speaks for ``caller`` (a spare claude taken by its pair): irisd
        looks a token up on every request, so the running child need not know."""
        self.access.rebind(self.token, caller)


class Access(msgspec.Struct, eq=False):
    """Who may use the HTTP face. ``url`` is where the owner reaches it; ``child_url``
    is where irisd's own children do (loopback, unless the host is a specific address)."""

    token_path: Path
    grants_dir: Path
    url: str = ""
    child_url: str = ""
    _owner: str = ""
    _children: dict[str, Caller] = msgspec.field(default_factory=dict)  # sha256(token) -> caller
    _login_codes: dict[str, float] = msgspec.field(default_factory=dict)  # sha256(code) -> valid until (monotonic)
    on_grant: Callable[[], None] = lambda: None  # a child is about to be spawned (the HTTP face loads)
    agents: AgentTokens | None = None  # outside A2A agents' tokens (iris a2a token)

    @classmethod
    def open(cls, home: Path) -> Access:
        """Load (or create) the owner's token; prepare the folder for children's configs."""
        access = cls(
            token_path=token_file(home), grants_dir=home / "run" / "mcp", agents=AgentTokens(tokens_file(home))
        )
        access._owner = load_or_create_owner_token(access.token_path)
        access.grants_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        access.grants_dir.chmod(0o700)
        for stale in access.grants_dir.glob("*.json"):  # of a daemon that died: its tokens are gone
            with contextlib.suppress(OSError):
                stale.unlink()
        return access

    # --- the owner ---------------------------------------------------------------------

    @property
    def owner_token(self) -> str:
        return self._owner

    def rotate_owner_token(self) -> str:
        """A new owner token; the old one and every login cookie stop working at once."""
        self._owner = write_owner_token(self.token_path)
        log.info("rotated the owner's HTTP token")
        return self._owner

    @property
    def cookie(self) -> str:
        """The login cookie's value: derived from the owner's token, so rotating it logs
        every browser out, and the cookie alone never reveals the token."""
        return hmac.new(self._owner.encode(), b"iris dashboard login", hashlib.sha256).hexdigest()

    def mint_login_code(self) -> str:
        """A code that logs one browser in, once, within LOGIN_CODE_TTL_S: what ``iris
        dashboard`` puts in the URL it opens (a browser's argv is readable by all; the
        owner's token must not be)."""
        now = time.monotonic()
        self._login_codes = {k: v for k, v in self._login_codes.items() if v > now}
        code = secrets.token_urlsafe(TOKEN_BYTES)
        self._login_codes[_digest(code)] = now + LOGIN_CODE_TTL_S
        return code

    def info(self, request: HttpInfo) -> HttpInfoReply:
        """``iris http``: the URL and the owner's token (a new one with ``rotate``), and a
        login code when asked."""
        token = self.rotate_owner_token() if request.rotate else self.owner_token
        code = self.mint_login_code() if request.login_code else ""
        return HttpInfoReply(url=self.url, token=token, login_code=code)

    def use_login_code(self, code: str) -> bool:
        valid_until = self._login_codes.pop(_digest(code), 0.0) if code else 0.0
        return valid_until > time.monotonic()

    # --- resolving -----------------------------------------------------------------------

    def caller_for_token(self, token: str) -> Caller | None:
        if not token:
            return None
        if self._owner and hmac.compare_digest(token.encode(), self._owner.encode()):
            return OWNER
        return self._children.get(_digest(token))

    def agent_for_token(self, token: str) -> Caller | None:
        """An outside A2A agent's caller. Only the A2A face asks: its tokens open nothing else."""
        name = self.agents.name_for(token) if token and self.agents is not None else None
        return Caller.agent(name) if name is not None else None

    def caller_for_cookie(self, value: str) -> Caller | None:
        if value and hmac.compare_digest(value.encode(), self.cookie.encode()):
            return OWNER
        return None

    # --- children ------------------------------------------------------------------------

    def mint(self, caller: Caller) -> str:
        token = secrets.token_urlsafe(TOKEN_BYTES)
        self._children[_digest(token)] = caller
        return token

    def revoke(self, token: str) -> None:
        self._children.pop(_digest(token), None)

    def rebind(self, token: str, caller: Caller) -> None:
        """``token`` (if not revoked) speaks for ``caller`` from now on."""
        if _digest(token) in self._children:
            self._children[_digest(token)] = caller

    @property
    def child_count(self) -> int:
        return len(self._children)

    def grant_child(self, team: str, pair: str) -> ChildGrant:
        """A token for the child about to be spawned for ``pair``, and the ``--mcp-config``
        file that hands it over (0600, created exclusively)."""
        return self.grant(Caller.child(team=team, pair=pair))

    def grant_reader(self) -> ChildGrant:
        """The same for one run of iris-agent: a token that may only read."""
        return self.grant(Caller.reader())

    def grant(self, caller: Caller) -> ChildGrant:
        self.on_grant()
        token = self.mint(caller)
        config = {
            "mcpServers": {
                "iris": {
                    "type": "http",
                    "url": f"{self.child_url}/mcp",
                    "headers": {"Authorization": f"Bearer {token}"},
                }
            }
        }
        path = self.grants_dir / f"{secrets.token_hex(8)}.json"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(config, out)
        except OSError:
            self.revoke(token)
            raise
        return ChildGrant(token=token, path=path, access=self)
