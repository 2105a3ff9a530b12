"""Real ``nats-server`` processes with JetStream on loopback, each with its own store
under a temporary folder: one server, or a cluster of three with replicated streams."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from harness import free_port, wait_for

BINARY = Path(sys.executable).parent / "nats-server"
README = Path(__file__).parents[2] / "README.md"


class NatsServer:
    """One ``nats-server -js``; ``start`` returns once it answers /healthz with JetStream
    ready (for a cluster member: once the cluster has a meta leader)."""

    def __init__(self, root: Path, name: str = "n1", *, extra: list[str] | None = None,
                 config: str = "") -> None:
        self.root = root / name
        self.root.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.port = free_port()
        self.monitor_port = free_port()
        self.cluster_port = free_port()
        self.extra = extra or []
        self.config = config  # extra lines of a server config file (users, authorization)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        argv = [str(BINARY), "-js", "-sd", str(self.root / "store"), "-a", "127.0.0.1", "-p", str(self.port),
                "-m", str(self.monitor_port), "-n", self.name]
        if self.config:
            path = self.root / "server.conf"
            path.write_text(self.config)
            argv += ["-c", str(path)]
        return argv + self.extra

    def start(self, *, wait: bool = True) -> NatsServer:
        log = open(self.root / "server.log", "ab")  # noqa: SIM115 (the process owns it)
        self.process = subprocess.Popen(self.argv(), stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        if wait:
            try:
                self.wait_ready()
            except BaseException:  # not left running for the rest of the worker's tests
                self.stop()
                raise
        return self

    def healthy(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            raise AssertionError(f"nats-server {self.name} exited:\n{self.log()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.monitor_port}/healthz", timeout=2) as answer:
                return bool(json.load(answer).get("status") == "ok")
        except OSError:
            return False

    def knows(self) -> int:
        """How many servers of its cluster (itself too) it tells clients about."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.monitor_port}/varz", timeout=2) as answer:
                return len(json.load(answer).get("connect_urls") or [])
        except OSError:
            return 0

    def wait_ready(self, timeout: float = 30.0) -> None:
        wait_for(self.healthy, timeout=timeout, what=f"nats-server {self.name} ready")

    def log(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def kill(self) -> None:
        """kill -9: no goodbye to the cluster, no flush."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


class NatsCluster:
    """Three servers routed to each other (cluster ``iris``); streams made on it get 3
    replicas, so one server may die without losing what JetStream acknowledged."""

    def __init__(self, root: Path, size: int = 3, *, config: str = "") -> None:
        self.servers = [NatsServer(root, f"n{index + 1}", config=config) for index in range(size)]
        routes = ",".join(f"nats://127.0.0.1:{s.cluster_port}" for s in self.servers)
        for server in self.servers:
            server.extra = ["--cluster_name", "iris", "--cluster", f"nats://127.0.0.1:{server.cluster_port}",
                            "--routes", routes]

    @property
    def urls(self) -> list[str]:
        return [server.url for server in self.servers]

    def start(self) -> NatsCluster:
        try:
            for server in self.servers:
                server.start(wait=False)
            for server in self.servers:
                server.wait_ready(timeout=60)
            # A meta leader needs two of three; a client must learn of all three (its INFO's
            # connect_urls), or irisd would make its streams with fewer replicas.
            size = len(self.servers)
            wait_for(lambda: all(s.knows() == size for s in self.servers), timeout=60,
                     what="the cluster fully routed")
        except BaseException:  # not left running for the rest of the worker's tests
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


def users_of_readme(*names: str) -> str:
    """The README's `authorization` block with its one user entry (irisd `ws-1`) written
    for each of ``names``, and an `admin` user the test reads the streams with."""
    block = re.search(r"```\n(authorization \{ users: \[\n.*?\n\] \})\n```", README.read_text(), re.S)
    assert block is not None, "the NATS permission template is no longer in README.md"
    head, *entry, tail = block.group(1).splitlines()
    template = "\n".join(line for line in entry if line.strip() != "...")  # "and so on for each irisd"
    template = re.sub(r'password: ("secret"|\.\.\.)', "password: PASSWORD", template)
    users = [template.replace("ws-1", name).replace("PASSWORD", f'"pw-{name}"') for name in names]
    users.append('  { user: admin, password: "pw-admin" }')
    return "\n".join([head, *users, tail]) + "\n"
