"""A warm tell over A2A vs over Iris's own HTTP API.

The same message to the same warm pair, round by round: a blocking A2A ``SendMessage``
(JSON-RPC on ``/a2a/alpha``, the owner's token, so the same pair as the API) vs ``POST
/api/teams/alpha/tell``, each on its own kept-alive connection. What A2A adds is the
face's own work: a watch of the team's events, the task read back (the tell and its
questions) and the JSON-RPC envelope.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import urllib.parse
from functools import partial

from _common import describe, header, median, running_iris, timed

from harness import Iris

TARGET = 1.25  # an A2A tell may cost at most a quarter more than the API's


class Connection:
    def __init__(self, iris: Iris) -> None:
        url = urllib.parse.urlsplit(iris.http_url)
        self.connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=300)
        self.headers = {
            "Authorization": f"Bearer {iris.owner_token}",
            "Content-Type": "application/json",
            "A2A-Version": "1.0",
        }

    def post(self, path: str, body: object) -> dict[str, object]:
        self.connection.request("POST", path, json.dumps(body), self.headers)
        response = self.connection.getresponse()
        answer: dict[str, object] = json.loads(response.read())
        assert response.status == 200, answer
        return answer

    def api_tell(self, text: str) -> None:
        answer = self.post("/api/teams/alpha/tell", {"message": text})
        assert answer["status"] == "completed", answer

    def a2a_tell(self, text: str) -> None:
        message = {"role": "ROLE_USER", "messageId": text, "parts": [{"text": text}]}
        answer = self.post(
            "/a2a/alpha", {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        )
        result = answer["result"]
        assert isinstance(result, dict) and result["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    header("A2A: a warm tell over A2A SendMessage vs over the HTTP API")
    a2a_times: list[float] = []
    api_times: list[float] = []
    with running_iris(["alpha"]) as iris:
        api, a2a = Connection(iris), Connection(iris)
        api.api_tell("warm up")
        a2a.a2a_tell("warm-up-a2a")
        for round_ in range(args.rounds):
            sides = [
                (a2a_times, partial(a2a.a2a_tell, f"a2a-{round_}")),
                (api_times, partial(api.api_tell, f"api {round_}")),
            ]
            for samples, action in sides if round_ % 2 == 0 else reversed(sides):
                samples.append(timed(action))
            print(".", end="", flush=True, file=sys.stderr)
    ratio = median(a2a_times) / median(api_times)
    print()
    print("ratios (medians):")
    verdict = "ok" if ratio <= TARGET else "MISSED"
    print(f"  warm tell over A2A / over the HTTP API  {ratio:5.2f}x  (target {TARGET}x: {verdict})")
    print("absolute:")
    print(describe("warm: A2A SendMessage", a2a_times))
    print(describe("warm: POST /api/teams/alpha/tell", api_times))
    if ratio > TARGET:
        sys.exit(1)


if __name__ == "__main__":
    main()
