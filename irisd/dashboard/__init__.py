"""The browser dashboard: static files that irisd's HTTP face serves at ``/``.

Plain HTML, CSS and JavaScript modules shipped as package data: no build step, no CDN,
nothing fetched from outside. The page reads everything through the token-checked
``/api`` routes and follows ``/api/events``; it holds no data itself. The HTTP face's
gate authenticates every request before it reaches these routes and adds the security
headers (irisd/http/gate.py: its content security policy allows only these files).
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).with_name("static")


def routes() -> list[BaseRoute]:
    """``GET /`` (the page) and ``GET /static/NAME`` (its files; starlette's StaticFiles
    serves only files inside STATIC_DIR)."""
    return [Route("/", index), Mount("/static", StaticFiles(directory=STATIC_DIR))]


async def index(request: Request) -> Response:
    return FileResponse(STATIC_DIR / "index.html")
