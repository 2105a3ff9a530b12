"""The ssh launcher against a real sshd, as another user with its own HOME: the real
claude runs "remotely" (its files land in that user's HOME, never in irisd's), answers
over the ssh channel, resumes its session there, and leaves nothing behind when it is
stopped or its ssh client is killed. An unreachable host fails fast with ssh's words; a
reverse-forward port taken on the remote host is named, and the pair starts again on another."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from fakes.core import no_events
from iris_common.config import parse_config
from iris_common.paths import IrisPaths
from irisd.claude.launcher import Child, IrisEndpoint, LaunchSpec, SshLauncher, claude_child
from irisd.claude.process import ChildEvent, ChildExited, ChildLine, ClaudeProcess
from irisd.claude.wire import ResultLine, StreamEventLine, user_turn
from irisd.core import run_core
from irisd.store.db import open_database
from irisd.store.facade import Store
from irisd.tokens import Access
from protocol.errors import ClaudeError
from protocol.messages import Tell
from scripted_model import ScriptedModel
from ssh.sshd import SshServer, command_lines

pytestmark = pytest.mark.claude


@pytest.fixture
def launcher(sshd: SshServer, remote_claude: str, remote_folder: str, model: ScriptedModel) -> SshLauncher:
    return SshLauncher(
        destination=sshd.destination,
        folder=remote_folder,
        claude_path=remote_claude,
        ssh_options=sshd.ssh_options(),
        env=remote_env(model),
    )


def remote_env(model: ScriptedModel) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": model.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


class Running:
    """A claude child of the launcher, its events collected."""

    def __init__(self, process: ClaudeProcess, events: trio.MemoryReceiveChannel[ChildEvent]) -> None:
        self.process = process
        self.events = events

    async def turn(self, text: str) -> ResultLine:
        await self.process.send(user_turn(text))
        async for event in self.events:
            if isinstance(event, ChildLine) and isinstance(event.line, ResultLine):
                return event.line
            if isinstance(event, ChildExited):
                raise AssertionError(f"claude ended: {event.describe()}")
        raise AssertionError("no result")

    async def exited(self) -> ChildExited:
        async for event in self.events:
            if isinstance(event, ChildExited):
                return event
        raise AssertionError("no exit")


@pytest.fixture
async def nursery() -> AsyncIterator[trio.Nursery]:
    async with trio.open_nursery() as nursery:
        yield nursery
        nursery.cancel_scope.cancel()


async def start(
    launcher: SshLauncher, nursery: trio.Nursery, session: str, *, resume: bool, endpoint: IrisEndpoint | None = None
) -> Running:
    send, receive = trio.open_memory_channel[ChildEvent](1000)
    spec = LaunchSpec(session_id=session, resume=resume, permissions="ask", endpoint=endpoint)
    command = launcher.command(spec)
    process = ClaudeProcess(command.argv, cwd=command.cwd, env=command.env, events=send)
    await nursery.start(process.run)
    if command.preamble:
        await process.send(command.preamble)
    return Running(process, receive)


async def no_remote_claude(sshd: SshServer) -> None:
    """Wait until the remote user runs nothing but (at most) sshd's own session processes."""
    left: list[str] = []
    with trio.move_on_after(20):
        while True:
            left = [line for line in command_lines(sshd.remote_processes()) if "sshd" not in line]
            if not left:
                return
            await trio.sleep(0.1)
    raise AssertionError(f"remote processes left behind: {left}")


async def test_a_remote_claude_answers_keeps_its_session_remotely_and_resumes_it(
    launcher: SshLauncher, sshd: SshServer, nursery: trio.Nursery, tmp_path: Path
) -> None:
    session = str(uuid.uuid4())
    with trio.fail_after(180):
        assert await launcher.can_resume(session) is False
        first = await start(launcher, nursery, session, resume=False)
        assert (await first.turn("hello over ssh")).result == "echo #1: hello over ssh"
        first.process.stop()
        await first.exited()
        # claude's transcript is in the remote user's HOME, where the probe finds it.
        escaped = "".join(c if c.isalnum() else "-" for c in launcher.folder)
        assert (sshd.home / ".claude" / "projects" / escaped / f"{session}.jsonl").exists()
        assert await launcher.can_resume(session) is True
        again = await start(launcher, nursery, session, resume=True)
        assert (await again.turn("still there?")).result == "echo #2: still there?"
        again.process.stop()
        await again.exited()
        await no_remote_claude(sshd)


async def test_killing_the_ssh_client_mid_turn_leaves_no_remote_process(
    launcher: SshLauncher, sshd: SshServer, nursery: trio.Nursery
) -> None:
    session = str(uuid.uuid4())
    with trio.fail_after(180):
        running = await start(launcher, nursery, session, resume=False)
        await running.process.send(user_turn("@slow:300 @chunks:100 a long answer"))
        async for event in running.events:  # it streams: claude is at work over there
            if isinstance(event, ChildLine) and isinstance(event.line, StreamEventLine):
                break
            assert not isinstance(event, ChildExited), event.describe()
        assert any("claude" in line for line in command_lines(sshd.remote_processes()))
        assert running.process.pid is not None
        os.kill(running.process.pid, signal.SIGKILL)  # the ssh client: the connection drops
        ended = await running.exited()
        assert ended.returncode == -signal.SIGKILL
        await no_remote_claude(sshd)


async def test_an_unreachable_host_fails_fast_with_ssh_s_own_message(
    launcher: SshLauncher, sshd: SshServer
) -> None:
    session = str(uuid.uuid4())
    options = list(sshd.ssh_options())
    options[options.index("-p") + 1] = "1"  # nothing listens there
    unreachable = SshLauncher(destination=sshd.destination, folder=launcher.folder, ssh_options=options)
    with trio.fail_after(10), pytest.raises(ClaudeError, match="Connection refused") as raised:
        await unreachable.can_resume(session)
    assert f"the ssh connection to {sshd.destination} failed" in raised.value.message


async def test_a_missing_folder_or_claude_is_named(
    launcher: SshLauncher, sshd: SshServer, nursery: trio.Nursery
) -> None:
    session = str(uuid.uuid4())
    with trio.fail_after(60):
        missing = SshLauncher(destination=sshd.destination, folder="/nowhere/at/all",
                              ssh_options=sshd.ssh_options())
        with pytest.raises(ClaudeError, match="the folder /nowhere/at/all does not exist on"):
            await missing.can_resume(session)
        no_claude = SshLauncher(destination=sshd.destination, folder=launcher.folder,
                                claude_path="no-such-claude", ssh_options=sshd.ssh_options())
        running = await start(no_claude, nursery, str(uuid.uuid4()), resume=False)
        ended = await running.exited()
        said = no_claude.describe_exit(ended.returncode, ended.stderr_tail, "plain")
        assert said.startswith("no-such-claude is not installed on") and "claudePath" in said


def private_file(path: Path) -> tuple[int, int, int, bool] | None:
    """(mode, folder mode, owner, readable) of ``path``, or None once its folder is gone."""
    if not path.parent.exists():
        return None
    info = path.stat()
    return (info.st_mode & 0o777, path.parent.stat().st_mode & 0o777, info.st_uid, path.is_file())


def describe(path: Path) -> str:
    return path.read_text()


async def test_the_child_s_token_reaches_the_remote_side_in_a_private_file_never_a_command_line(
    launcher: SshLauncher, sshd: SshServer, nursery: trio.Nursery
) -> None:
    token = "secret-token-" + uuid.uuid4().hex
    endpoint = IrisEndpoint(url="http://127.0.0.1:9/mcp", token=token)  # nothing listens: claude starts anyway
    with trio.fail_after(120):
        running = await start(launcher, nursery, str(uuid.uuid4()), resume=False, endpoint=endpoint)
        assert (await running.turn("hi")).result == "echo #1: hi"
        lines = command_lines(sshd.remote_processes())
        assert not any(token in line for line in lines)
        claude = next(line for line in lines if "--mcp-config" in line)
        config = Path(claude.split("--mcp-config ", 1)[1].split()[0])
        assert private_file(config) == (0o600, 0o700, sshd.uid, True)
        assert token in describe(config)
        running.process.stop()
        await running.exited()
        await no_remote_claude(sshd)
        assert private_file(config) is None  # removed with the child



async def test_a_forward_port_taken_on_the_remote_host_is_named_and_the_pair_starts_again_on_another(
    sshd: SshServer, remote_claude: str, remote_folder: str, model: ScriptedModel, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A pair in process (the real pool, the real ssh and claude): the first start's forward
    port is taken on the "remote" loopback before ssh asks for it, so ssh gives up."""
    ports: list[int] = []
    taken = socket.socket()

    def taking_the_first_port(
        argv: list[str], cwd: str, env: dict[str, str], events: trio.MemorySendChannel[ChildEvent]
    ) -> Child:
        ports.append(int(argv[argv.index("-R") + 1].split(":")[1]))
        if len(ports) == 1:
            with contextlib.suppress(OSError):  # taken already: all the same to ssh
                taken.bind(("127.0.0.1", ports[0]))
                taken.listen()
        return claude_child(argv, cwd, env, events)

    team = {"path": remote_folder, "host": sshd.destination, "sshOptions": sshd.ssh_options(),
            "claudePath": remote_claude, "env": remote_env(model)}
    config = parse_config(json.dumps({"teams": {"far": team}}).encode(), source="test")
    paths = IrisPaths(home=tmp_path, socket=tmp_path / "s", claude_config_dir=tmp_path / "claude")
    access = Access.open(tmp_path)
    access.child_url = "http://127.0.0.1:9"  # the forward's target: never reached here
    store = Store(open_database(tmp_path / "iris.db"), inline=True)
    with taken, trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            core = await nursery.start(
                functools.partial(run_core, config, paths, store, child_factory=taking_the_first_port, access=access)
            )
            reply = await core.dispatcher.tell(Tell(to_team="far", message="hello"), no_events)
            nursery.cancel_scope.cancel()
        store.close()
        assert (reply.tell.status, reply.tell.text) == ("completed", "echo #1: hello"), reply.tell
        assert len(ports) == 2 and ports[0] != ports[1]
        said = [r.getMessage() for r in caplog.records if r.name == "irisd.pair"]
        assert f"claude crashed on start (1 times): {forward_refused(sshd.destination, ports[0])}" in said, said
        await no_remote_claude(sshd)


def forward_refused(destination: str, port: int) -> str:
    return (
        f"the ssh connection to {destination} could not forward port {port} on {destination} back to irisd: "
        "that port is taken there, or its sshd allows no TCP forwarding (AllowTcpForwarding, PermitListen); "
        "each start picks another random port"
    )

