"""settings.notify.webhook: a JSON POST per notice, retried with backoff, bounded.

The body names the kind, the id, the team and the command that decides it, and also
carries ``text`` (what Slack-compatible endpoints show) and ``title``/``message``
(ntfy's JSON fields): one body that the common receivers read as is.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec
import trio

from irisd.notify.gate import Notice

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("irisd.notify")

RETRY_DELAYS_S = (1.0, 4.0, 15.0)  # after the 1st, 2nd and 3rd failure; then it is given up
TIMEOUT_S = 10.0


class WebhookBody(msgspec.Struct, kw_only=True):
    kind: str  # approval | question | health
    id: str
    team: str
    title: str
    message: str
    command: str  # the command that decides it
    severity: str
    text: str  # for Slack-compatible endpoints: all of it in one line


def body(notice: Notice) -> bytes:
    return msgspec.json.encode(WebhookBody(
        kind=notice.kind, id=notice.id, team=notice.team, title=notice.title, message=notice.message,
        command=notice.command, severity=notice.severity,
        text=f"{notice.title}: {notice.message} (decide: {notice.command})",
    ))


async def post(client: httpx2.AsyncClient, url: str, notice: Notice,
               delays: tuple[float, ...] = RETRY_DELAYS_S) -> bool:
    """POST ``notice`` to ``url`` until a 2xx answer, retrying after each of ``delays``;
    False (logged) once they are used up. A 4xx other than 408/429 is not retried: the
    receiver refuses the request itself. Cancellation stops it at once."""
    import httpx2  # loaded with the first webhook notice (service.py)

    problem = ""
    for attempt, delay in enumerate((*delays, None)):
        try:
            response = await client.post(url, content=body(notice), headers={"Content-Type": "application/json"},
                                         timeout=TIMEOUT_S)
        except httpx2.HTTPError as exc:
            problem = f"{type(exc).__name__}: {exc}"
        else:
            if 200 <= response.status_code < 300:
                return True
            problem = f"HTTP {response.status_code}"
            if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
                break
        if delay is None:
            break
        log.info("webhook failed; retrying", extra={"attempt": attempt + 1, "error": problem, "retry_in_s": delay})
        await trio.sleep(delay)
    log.warning("webhook not delivered (settings.notify.webhook); see the error",
                extra={"notice": notice.key, "error": problem})
    return False
