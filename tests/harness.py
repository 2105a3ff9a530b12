"""Running the real thing in tests: an isolated irisd subprocess, the real claude CLI,
the scripted model. Every instance lives under its own temporary folder: its own
IRIS_HOME, socket, database, CLAUDE_CONFIG_DIR and team folders."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from iris_cli.client import Client
from iris_common import locate
from protocol.errors import DaemonNotRunningError

REPO = Path(__file__).resolve().parents[1]
CLAUDE_VERSION = locate.CLAUDE_VERSION  # iris_common/claude.versions: one place


def claude_under_test_version() -> str:
    """The version of the claude the tests run (the pinned one, or IRIS_CLAUDE_VERSION's)."""
    return locate.claude_version(str(claude_binary()))


def claude_binary() -> Path:
    """The pinned claude CLI; tests that need it FAIL (never skip) when it is missing."""
    path = Path(os.environ.get("IRIS_CLAUDE_BIN") or REPO / ".cache/claude-cli/node_modules/.bin/claude")
    if not os.access(path, os.X_OK):
        raise RuntimeError(
            f"claude CLI not found at {path}; run .ci/run (or: npm install --prefix .cache/claude-cli "
            f"@anthropic-ai/claude-code@{CLAUDE_VERSION}), or set IRIS_CLAUDE_BIN"
        )
    return path


class Iris:
    """One isolated Iris installation: config, teams, env; starts and stops irisd."""

    def __init__(self, root: Path, *, model_url: str, claude: Path | str) -> None:
        self.root = root
        self.home = root / "home"
        # Unix socket paths are limited to 107 bytes: keep it short, whatever tmp_path is.
        self.socket = Path(tempfile.mkdtemp(prefix="iris-", dir="/tmp")) / "irisd.sock"
        self.claude_config = root / "claude-config"
        self.user_home = root / "user-home"
        self.user_home.mkdir(parents=True, exist_ok=True)
        self.teams_dir = root / "teams"
        self.claude = str(claude)
        # httpPort 0: any free port, so that no test binds 1615 and parallel tests never collide.
        # (preloadMcp is off by default: a child's requests no longer need the MCP SDK.)
        self.settings: dict[str, Any] = {"claudePath": self.claude, "httpPort": 0}
        self.teams: dict[str, dict[str, Any]] = {}
        self.env = dict(os.environ)
        for key in [k for k in self.env if k.startswith(("IRIS_", "CLAUDE", "ANTHROPIC"))]:
            del self.env[key]
        self.env.pop("DBUS_SESSION_BUS_ADDRESS", None)  # no test irisd pops up on the desktop
        self.env.update(
            IRIS_HOME=str(self.home),
            IRIS_SOCKET=str(self.socket),
            CLAUDE_CONFIG_DIR=str(self.claude_config),
            # A HOME of its own: the login shell claude's Bash tool starts reads no ~/.bashrc
            # of the machine's (pyenv's init there runs 'pyenv rehash', whose lock, left by a
            # tool process a test stops mid-way, made every later Bash call wait 60 s).
            HOME=str(self.user_home),
            ANTHROPIC_BASE_URL=model_url,
            ANTHROPIC_API_KEY="test-key",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            # A claude the tests start themselves (with `iris mcp` as its MCP server) would give
            # the shim only 5 s to connect: on a loaded machine it went on without Iris's tools.
            MCP_CONNECT_TIMEOUT_MS="60000",
            PYTHONUNBUFFERED="1",
        )
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = root / "irisd.log"
        self.home.mkdir(parents=True, exist_ok=True)

    # --- configuration ---------------------------------------------------------------

    def add_team(self, name: str, folder: str | None = None, **options: Any) -> Path:
        path = self.teams_dir / (folder or name)
        path.mkdir(parents=True, exist_ok=True)
        self.teams[name] = {"path": str(path), **options}
        return path

    def write_config(self) -> Path:
        import yaml

        config = self.home / "config.yaml"
        config.write_text(yaml.safe_dump({"settings": self.settings, "teams": self.teams}))
        return config

    # --- the daemon --------------------------------------------------------------------

    def start(self, *, wait: bool = True) -> subprocess.Popen[bytes]:
        self.write_config()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "irisd.main", "--log-level", "debug"],
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd=self.root,
            )
        if wait:
            self.wait_ready()
        return self.process

    def wait_ready(self, timeout: float = 60.0) -> None:
        # 60 s: a start took over 20 s at a load of 17 on 2 cores; a start that fails says so
        # at once (irisd exits and its log is shown), so the deadline is only for a hang.
        assert self.process is not None
        wait_for_daemon(self.process, self.socket, self.log_path, timeout)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=timeout)
        self.process = None
        return code

    @property
    def http_url(self) -> str:
        """Where this irisd's HTTP face listens (asked of the running daemon)."""
        from protocol.messages import GetStatus, StatusReply

        status = self.request(GetStatus())
        assert isinstance(status, StatusReply) and status.http_url, status
        return status.http_url

    @property
    def owner_token(self) -> str:
        return (self.home / "http-token").read_text().strip()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def client(self, timeout: float | None = 120.0) -> Client:
        return Client(self.socket, timeout=timeout)

    def request(self, request: Any) -> Any:
        with self.client() as client:
            return client.request(request)

    def wait_for_approval(self, timeout: float = 60.0) -> dict[str, Any]:
        """The first pending approval, as ``iris approvals --json`` shows it, once there is one
        (waited for over the socket: polling the CLI cost a core while claude needed it)."""
        from protocol.messages import ApprovalsReply, ListApprovals

        def pending() -> bool:
            reply = self.request(ListApprovals())
            assert isinstance(reply, ApprovalsReply), reply
            return bool(reply.approvals)

        wait_for(pending, timeout, "an approval request", every=0.05, detail=lambda: self.log()[-2000:])
        approvals: list[dict[str, Any]] = self.cli_json("approvals")
        return approvals[0]

    def wait_for_tell_status(self, tell_id: str, status: str, timeout: float = 60.0) -> None:
        """Wait until the tell ``tell_id`` is ``status`` (``running``, ``completed``...)."""
        from protocol.messages import GetTell, TellReply

        def reached() -> bool:
            reply = self.request(GetTell(tell_id=tell_id))
            assert isinstance(reply, TellReply), reply
            return reply.tell.status == status

        wait_for(reached, timeout, f"tell {tell_id} to be {status}", every=0.05, detail=lambda: self.log()[-2000:])

    # --- the CLI -----------------------------------------------------------------------

    def cli(
        self, *args: str, input: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "iris_cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            input=input,
            timeout=timeout,
            cwd=self.root,
        )

    def cli_pty(self, *args: str, timeout: float = 120, react: Any = None, columns: int = 80) -> tuple[int, str]:
        """``iris ARGS`` on a pseudo-terminal: the output a person sees (see ``run_in_pty``)."""
        argv = [sys.executable, "-m", "iris_cli", *args]
        return run_in_pty(argv, env=self.env, cwd=self.root, timeout=timeout, react=react, columns=columns)

    def cli_json(self, *args: str, ok: bool = True) -> Any:
        """``iris ARGS --json``, decoded; with ``ok`` it must succeed (else the log says why)."""
        result = self.cli(*args, "--json")
        if ok:
            assert result.returncode == 0, result.stderr + self.log()[-2000:]
        return json.loads(result.stdout or result.stderr)

    def watch(self, *args: str) -> Watcher:
        """``iris watch --json ARGS``, returned once irisd has subscribed it (its first event)."""
        return Watcher([sys.executable, "-m", "iris_cli", "watch", *args, "--json"], env=self.env, cwd=self.root)


@contextlib.contextmanager
def started(root: Path, *, model_url: str, claude: Path | str, teams: dict[str, dict[str, Any]],
            settings: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Iterator[Iris]:
    """An Iris with ``teams`` (name: ``add_team``'s options), ``settings`` and ``env`` (more
    variables for irisd), started, and stopped at the end: the daemon that the tests of a
    module share (a module-scoped fixture), where a test does not need one of its own. Such
    tests leave it as they found it: no approval pending, no tell running, no team or rule added."""
    iris = Iris(root, model_url=model_url, claude=claude)
    for name, options in teams.items():
        if "a2a" in options:  # an A2A agent as the team: no folder
            iris.teams[name] = dict(options)
        else:
            iris.add_team(name, **options)
    iris.settings.update(settings or {})
    iris.env.update(env or {})
    iris.start()
    try:
        yield iris
    finally:
        if iris.process is not None:
            iris.stop(timeout=30)
        shutil.rmtree(iris.socket.parent, ignore_errors=True)


class Watcher:
    """A running ``iris watch --json``: its events as dicts, each read with a deadline.

    A thread reads its stdout into a queue, so a missed event fails the test after
    ``timeout`` seconds instead of blocking it forever. The constructor returns once the
    ``watching`` event has arrived: from then on every event reaches this watcher."""

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 60.0) -> None:
        import queue
        import threading

        self.process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []

        def read() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self._lines.put(line)
            self._lines.put(None)  # end of output

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        first = self.next_event(timeout)
        assert first["type"] == "watching", first

    def next_event(self, timeout: float = 60.0) -> dict[str, Any]:
        import queue

        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no event from the watcher within {timeout:g} s; seen: {self.seen}") from None
        if line is None:
            self._lines.put(None)
            raise AssertionError(f"the watcher ended ({self.process.wait()}): {self.stderr()}; seen: {self.seen}")
        event: dict[str, Any] = json.loads(line)
        self.seen.append(event)
        return event

    def until(self, condition: Any, timeout: float = 60.0, what: str = "an event") -> dict[str, Any]:
        """Read events until one satisfies ``condition`` (and return it), within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}; seen: {self.seen}")
            event = self.next_event(left)
            if condition(event):
                return event

    def stderr(self) -> str:
        if self.process.poll() is None or self.process.stderr is None:
            return ""
        return self.process.stderr.read()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(timeout=30)
        self._reader.join(timeout=30)  # it ends at the end of output
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_for_daemon(process: subprocess.Popen[bytes], socket_path: Path, log_path: Path, timeout: float = 60.0) -> None:
    """Wait until the irisd ``process`` answers on ``socket_path``. It fails at once if irisd
    exits, and either way shows the last lines of its log: why it did not start."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise AssertionError(f"irisd exited with {process.returncode}; its log ends:\n{log_tail(log_path)}")
        try:
            with Client(socket_path, timeout=5) as client:
                client.connect()
            return
        except DaemonNotRunningError:
            if time.monotonic() > deadline:
                tail = log_tail(log_path)
                raise AssertionError(f"irisd not ready after {timeout:g} s; its log ends:\n{tail}") from None
            time.sleep(0.02)


def log_tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else "(no log)"


_ports_given: set[int] = set()


def free_port() -> int:
    """A loopback TCP port nothing listens on now, and never one this process gave out
    before: the kernel may give two probes in a row the same free port (a NATS cluster's
    nine ports once had one server's monitor port as another's route port)."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port not in _ports_given:
            _ports_given.add(port)
            return port


def wait_for(
    condition: Callable[..., Any],
    timeout: float = 60.0,
    what: str = "condition",
    *,
    every: float = 0.02,
    detail: Callable[[], str] | None = None,
) -> Any:
    """Poll ``condition`` every ``every`` seconds until it returns something truthy, and
    return that: the one way a test waits for a state it cannot be told about. After
    ``timeout`` seconds it fails naming ``what`` (and ``detail()``: a log tail, say).

    A condition that costs time (one that runs ``iris`` costs about 0.15 s of CPU) is
    polled at most a third of the time: the pause after it is at least twice what it took.
    Polled back to back, such a wait kept a core busy while the claude it waited for
    needed that core (the suite runs three workers on two cores)."""
    deadline = time.monotonic() + timeout
    while True:
        started = time.monotonic()
        value = condition()
        if value:
            return value
        now = time.monotonic()
        if now > deadline:
            said = f"\n{detail()}" if detail is not None else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{said}")
        time.sleep(max(every, min(2 * (now - started), deadline - now)))  # never far past the deadline


async def wait_until(condition: Callable[..., Any], *, every: float) -> Any:
    """``wait_for``'s twin for trio tests: check ``condition`` (a value or an awaitable of
    one), then sleep ``every`` seconds, until it is truthy; return it. On the autojump clock
    each sleep moves virtual time by ``every`` while the loop is idle, so keep ``every``
    what the exact times a test asserts expect. No deadline of its own: the test's
    ``fail_after`` (or its timeout) bounds it. Use an event where the code under test has one."""
    import inspect

    import trio

    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        await trio.sleep(every)


ECHO = re.compile(r"echo #(\d+): (.*)", re.DOTALL)


def echoed(text: str) -> tuple[int, str]:
    """The turn and the words of the scripted model's ``echo #N: words``. A warm pair that
    tests share goes on counting from test to test: compare turns, do not fix them."""
    match = ECHO.fullmatch(text)
    assert match is not None, text
    return int(match[1]), match[2]


def transcript_file(iris: Iris, folder: Path, session_id: str) -> Path:
    """Where claude keeps a session's transcript (the escaping rule of the facts page)."""
    escaped = "".join(c if c.isascii() and c.isalnum() else "-" for c in str(folder.resolve()))
    return iris.claude_config / "projects" / escaped / f"{session_id}.jsonl"


def child_pids(parent: int) -> set[int]:
    """Direct children of ``parent``, from /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent:
            found.add(int(entry.name))
    return found


def claude_processes_under(folders: Iterable[Path]) -> list[int]:
    """Live claude processes whose cwd is one of ``folders`` (for leak checks)."""
    wanted = {str(f.resolve()) for f in folders}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        # The executable's name, not anywhere in the command line: a tool's shell holds
        # claude's config folder in its arguments for a moment after the tool ran.
        if cwd in wanted and b"claude" in Path(os.fsdecode(cmd.split(b"\0")[0])).name.encode():
            found.append(int(entry.name))
    return found


def run_in_pty(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    timeout: float = 120.0,
    react: Any = None,
    columns: int = 80,
) -> tuple[int, str]:
    """Run ``argv`` with stdin, stdout and stderr on a pseudo-terminal (``columns`` wide),
    as a person at a terminal sees it; returns the exit code and everything it wrote.
    ``react(output_so_far)`` is called as output comes; once it returns True it is not
    called again (to approve an approval the command shows, for example)."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {**env, "COLUMNS": str(columns), "TERM": "xterm"}
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, close_fds=True)
    os.close(slave)
    output = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the terminal's other side closed
                    data = b""
                if not data:
                    break
                output += data
                if react is not None and react(output.decode(errors="replace")):
                    react = None
            elif process.poll() is not None:
                break
        else:
            process.kill()
            written = output.decode(errors="replace")
            raise AssertionError(f"{argv} did not end within {timeout:g} s; it wrote:\n{written}")
        return process.wait(timeout=30), output.decode(errors="replace")
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
            process.wait()


class Http:
    """Raw HTTP to one irisd: every header as given (http.client adds no Host of its own)."""

    def __init__(self, iris: Iris) -> None:
        self.url = iris.http_url
        parsed = urllib.parse.urlsplit(self.url)
        self.host, self.port = parsed.hostname or "", parsed.port or 0
        self.token = iris.owner_token

    def request(
        self,
        method: str,
        path: str,
        body: bytes | dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
        auth: bool = True,
        timeout: float = 120,
    ) -> tuple[int, dict[str, str], bytes]:
        wanted = {"Host": f"{self.host}:{self.port}"}
        if auth:
            wanted["Authorization"] = f"Bearer {self.token}"
        wanted.update(headers or {})
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for key, value in wanted.items():
                connection.putheader(key, value)
            if data is not None:
                connection.putheader("Content-Length", str(len(data)))
            try:
                connection.endheaders(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused before the whole body was sent (413): the answer is there to read
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def json(self, method: str, path: str, body: dict[str, Any] | None = None, **options: Any) -> tuple[int, Any]:
        status, _, data = self.request(method, path, body, **options)
        return status, json.loads(data)
