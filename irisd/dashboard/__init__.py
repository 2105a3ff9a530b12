"""The browser dashboard: static files that irisd's HTTP face serves at ``/``.

Plain HTML, CSS and JavaScript modules shipped as package data: no build step, no CDN,
nothing fetched from outside. The page reads everything through the token-checked
``/api`` routes and follows ``/api/events``; it holds no data itself. The HTTP face
authenticates the request before it reaches :class:`Dashboard`.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

STATIC_DIR = Path(__file__).with_name("static")
PREFIX = "/static/"

# No inline script or style, nothing from another origin, never framed. 'self' in
# connect-src covers the same-origin WebSocket.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}

_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def content_type(name: str) -> str:
    suffix = Path(name).suffix
    if suffix in _TYPES:
        return _TYPES[suffix]
    kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return f"{kind}; charset=utf-8" if kind.startswith("text/") else kind


class Dashboard:
    """An ASGI app for ``GET /`` and ``GET /static/NAME``: the files are read once, when
    irisd starts (a few tens of kilobytes), so serving never touches the disk."""

    def __init__(self, folder: Path = STATIC_DIR) -> None:
        self.files = {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}

    @staticmethod
    def handles(path: str) -> bool:
        return path == "/" or path.startswith(PREFIX)

    def find(self, path: str) -> tuple[str, bytes] | None:
        name = "index.html" if path == "/" else path.removeprefix(PREFIX)
        body = self.files.get(name)  # a plain dict lookup: no path ever reaches the disk
        return None if body is None else (name, body)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = self.find(scope["path"]) if scope.get("method") in ("GET", "HEAD") else None
        if found is None:
            status, kind, body = 404, "text/plain; charset=utf-8", b"not found\n"
        else:
            status, kind, body = 200, content_type(found[0]), found[1]
        headers = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
        headers += [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else body})
