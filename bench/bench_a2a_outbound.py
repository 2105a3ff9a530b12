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
import contextlib
import http.client
import json
import os
import subprocess
import sys
import uuid
from urllib.parse import urlsplit

from _common import REPO, cpu_seconds, describe, header, median, ms, request, running_iris, timed
from bench_warm_path import checkout

from harness import Iris
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
    parser.add_argument("--baseline", help="also through irisd built from this git revision (e.g. HEAD~3)")
    args = parser.parse_args()
    agent = subprocess.Popen([sys.executable, str(AGENT)], stdout=subprocess.PIPE, text=True)
    try:
        assert agent.stdout is not None
        base = agent.stdout.readline().split()[-1]
        with contextlib.ExitStack() as stack:
            sides: dict[str, Iris] = {"irisd": stack.enter_context(running_iris([], start=False))}
            if args.baseline:
                old_code = stack.enter_context(checkout(args.baseline))
                sides["old"] = stack.enter_context(running_iris([], start=False))
                sides["old"].env["PYTHONPATH"] = str(old_code)  # ahead of this checkout's editable install
                sides["old"].settings.pop("preloadMcp", None)  # a setting the older code may not know
            for iris in sides.values():
                iris.teams["agent"] = {"a2a": base}
                iris.start()
            cpu = dict.fromkeys(sides, 0.0)

            def through(name: str, text: str) -> None:
                iris = sides[name]
                assert iris.process is not None
                before = cpu_seconds(iris.process.pid)
                reply = request(iris, Tell(to_team="agent", message=text, timeout_ms=0))
                assert isinstance(reply, TellReply) and reply.status == "completed", reply
                cpu[name] += cpu_seconds(iris.process.pid) - before

            for name in sides:
                through(name, "warm up")  # the first tell imports the HTTP client (0.27 s, once)
            direct(base, "warm up")
            samples: dict[str, list[float]] = {"direct": [], **{name: [] for name in sides}}
            cpu = dict.fromkeys(sides, 0.0)
            order = list(samples)
            for round_ in range(args.rounds):
                shift = round_ % len(order)
                for name in order[shift:] + order[:shift]:
                    if name == "direct":
                        samples[name].append(timed(direct, base, "hello"))
                    else:
                        samples[name].append(timed(through, name, "hello"))
        header("A2A agent as a team: a tell through irisd vs straight to the agent")
        print(f"  load average: {os.getloadavg()[0]:.1f}")
        for name in sides:
            ratio = median(samples[name]) / median(samples["direct"])
            extra = median(samples[name]) - median(samples["direct"])
            label = f"irisd at {args.baseline}" if name == "old" else "through irisd"
            print(f"  {label}: {ratio:.2f}x the direct message (+{ms(extra)}); irisd's CPU per tell "
                  f"{ms(cpu[name] / args.rounds)} (the load-robust figure)")
        if "old" in sides and cpu["old"]:
            print(f"  irisd's CPU per tell, this checkout / {args.baseline}: {cpu['irisd'] / cpu['old']:.2f}x")
        for name, values in samples.items():
            print(describe(name, values))
    finally:
        agent.terminate()
        agent.wait(timeout=10)
        if agent.stdout is not None:
            agent.stdout.close()


if __name__ == "__main__":
    main()
