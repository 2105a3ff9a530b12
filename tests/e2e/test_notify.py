"""Notifications with the real claude and the scripted model: a new approval reaches
settings.notify.webhook (a local HTTP server here) as JSON naming the kind, the id, the
team and the command that decides it; a failed POST is retried."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from harness import Iris, wait_for

WRITE = '@tool:Bash {"command": "echo hi > made.txt"}'


class Receiver(http.server.ThreadingHTTPServer):
    """Records each POST; answers 500 to the first ``fail_first`` of them."""

    def __init__(self, fail_first: int = 0) -> None:
        self.received: list[dict[str, Any]] = []
        self.attempts = 0
        self.fail_first = fail_first
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.attempts += 1
                ok = receiver.attempts > receiver.fail_first
                if ok:
                    receiver.received.append({"content_type": self.headers["Content-Type"], **json.loads(data)})
                self.send_response(200 if ok else 500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver(fail_first=1)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.claude
def test_a_new_approval_reaches_the_webhook_naming_the_command_that_decides_it(iris: Iris, receiver: Receiver) -> None:
    iris.add_team("alpha")
    iris.settings["notify"] = {"webhook": receiver.url}
    iris.start()
    iris.cli_json("tell", "alpha", WRITE, "--timeout", "-1")
    (sent,) = wait_for(lambda: receiver.received, 60, "the webhook's POST")
    (approval,) = iris.cli_json("approvals")
    assert sent["content_type"] == "application/json"
    assert (sent["kind"], sent["id"], sent["team"]) == ("approval", approval["id"], "alpha")
    assert sent["command"] == f"iris approve {approval['id']}  (or: iris deny {approval['id']})"
    assert sent["title"] == "alpha asks to use Bash" and "echo hi > made.txt" in sent["message"]
    assert receiver.attempts == 2  # the first POST failed (500) and was retried
    iris.cli_json("approve", approval["id"])
    assert len(receiver.received) == 1  # said once
