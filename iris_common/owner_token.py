"""The owner's token of the HTTP face: a 0600 file under IRIS_HOME, made once, rotatable.

Both sides need it: irisd checks requests against it, ``iris http token`` prints or rotates it
(also while irisd is down).
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

from protocol.errors import ConfigError

log = logging.getLogger("irisd.http")

TOKEN_BYTES = 32  # 256 bits: guessing is hopeless, rate limits only keep the noise down


def token_file(home: Path) -> Path:
    return home / "http-token"


def read_owner_token(path: Path) -> str | None:
    """The owner's token, or None if there is none yet; a file others can read is fixed."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    if info.st_uid != os.getuid():
        raise ConfigError(f"{path} belongs to uid {info.st_uid}, not you; remove it (a new token is made)")
    if stat.S_IMODE(info.st_mode) & 0o077:
        log.warning("the HTTP token file was readable by others; made it 0600", extra={"file": str(path)})
        path.chmod(0o600)
    token = path.read_text().strip()
    return token or None


def write_owner_token(path: Path, token: str | None = None) -> str:
    """Write a new owner token (atomically, born 0600) and return it."""
    token = token or secrets.token_urlsafe(TOKEN_BYTES)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    partial.replace(path)
    return token


def load_or_create_owner_token(path: Path) -> str:
    return read_owner_token(path) or write_owner_token(path)
