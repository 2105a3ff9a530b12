"""Benchmark 9: a tell to an A2A agent through irisd vs the same message sent straight to
the agent.

Side by side, round by round (each side first in turn), against the fake agent of the
tests (the official a2a-sdk server, answering at once, streaming):

* direct: SendStreamingMessage to the agent from a blocking HTTP client in this process
          (one connection per message, the events read to the end);
* irisd:  the same message as a tell from a blocking protocol client: irisd fetches the
          agent's card, streams the message in the pair's context and saves the tell.

Run: .venv/bin/python bench/bench_a2a_outbound.py [--rounds N]
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import uuid
from urllib.parse import urlsplit

from _common import REPO, cpu_seconds, describe, header, median, ms, request, running_iris, timed

from protocol.messages import Tell, TellReply

AGENT = REPO / "tests" / "fakes" / "a2a_agent.py"


def direct(base: str, text: str) -> None:
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    body = {
        "jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}},
    }
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0", "Accept": "text/event-stream"}
    connection.request("POST", "/rpc", json.dumps(body), headers)
    answer = connection.getresponse().read().decode()
    connection.close()
    assert "TASK_STATE_COMPLETED" in answer, answer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    agent = subprocess.Popen([sys.executable, str(AGENT)], stdout=subprocess.PIPE, text=True)
    try:
        assert agent.stdout is not None
        base = agent.stdout.readline().split()[-1]
        with running_iris([], start=False) as iris:
            iris.teams["agent"] = {"a2a": base}
            iris.start()

            assert iris.process is not None
            pid = iris.process.pid
            cpu = [0.0]

            def through_irisd(text: str) -> None:
                before = cpu_seconds(pid)
                reply = request(iris, Tell(to_team="agent", message=text, timeout_ms=0))
                assert isinstance(reply, TellReply) and reply.status == "completed", reply
                cpu[0] += cpu_seconds(pid) - before

            through_irisd("warm up")  # the first tell imports the HTTP client (0.27 s, once)
            direct(base, "warm up")
            samples: dict[str, list[float]] = {"direct": [], "irisd": []}
            cpu[0] = 0.0
            for round_ in range(args.rounds):
                sides = [("direct", lambda: direct(base, "hello")), ("irisd", lambda: through_irisd("hello"))]
                for name, action in sides if round_ % 2 == 0 else reversed(sides):
                    samples[name].append(timed(action))
        header("A2A agent as a team: a tell through irisd vs straight to the agent")
        ratio = median(samples["irisd"]) / median(samples["direct"])
        extra = median(samples["irisd"]) - median(samples["direct"])
        print(f"  through irisd: {ratio:.2f}x the direct message (+{ms(extra)}); irisd's CPU per tell "
              f"{ms(cpu[0] / args.rounds)} (the load-robust figure)")
        for name, values in samples.items():
            print(describe(name, values))
    finally:
        agent.terminate()
        agent.wait(timeout=10)
        if agent.stdout is not None:
            agent.stdout.close()


if __name__ == "__main__":
    main()
