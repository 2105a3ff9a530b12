"""The browser dashboard: static files that irisd's HTTP face serves at ``/``.

Plain HTML, CSS and JavaScript modules shipped as package data: no build step, no CDN,
nothing fetched from outside. The page reads everything through the token-checked
``/api`` routes and follows ``/api/events``; it holds no data itself.
"""

from __future__ import annotations

from pathlib import Path

STATIC_DIR = Path(__file__).with_name("static")

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
