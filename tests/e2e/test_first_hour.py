"""A new user's first hour (issue 12), on a pseudo-terminal where the output is for
people: claude is found with no PATH or config edit, a tell says what it waits for
(an approval with its commands), root + skip is refused up front with the fix.

Most tests share one irisd (``shared``), each with teams of its own; those that stop it,
start it with another claude or run their own have theirs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import CLAUDE_VERSION, Iris, claude_under_test_version, run_in_pty, started, wait_for_daemon
from iris_common.environment import root_skip_problem
from protocol.messages import ApprovalsReply, Decide, ListApprovals
from scripted_model import ScriptedModel


def plain(output: str) -> str:
    """What a terminal shows, without the colours."""
    return re.sub(r"\x1b\[[0-9;]*m", "", output)


TOUCH = '@tool:Bash {"command": "touch made.txt"}'


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    """alpha: the approval tests' (each decides its approval: none stays pending); skipping:
    permissions skip; here, and later, whose folder is missing at start (e.g. a repository
    not cloned yet on this machine)."""
    root = tmp_path_factory.mktemp("first-hour")
    teams: dict[str, dict[str, Any]] = {
        "alpha": {}, "skipping": {"permissions": "skip"}, "here": {}, "later": {"path": str(root / "not-cloned")}}
    with started(root, model_url=model.base_url, claude=claude_bin, teams=teams) as iris:
        yield iris


def deny_what_is_left(iris: Iris) -> None:
    """Denies the approvals a failed test left pending: none waits for the next test."""
    reply = iris.request(ListApprovals())
    assert isinstance(reply, ApprovalsReply), reply
    for approval in reply.approvals:
        iris.request(Decide(approval_id=approval.id, allow=False, reason="left by a failed test"))


def test_an_approval_is_shown_with_its_commands_and_the_wait_is_named(shared: Iris) -> None:
    iris = shared
    folder = Path(iris.teams["alpha"]["path"])
    (folder / "made.txt").unlink(missing_ok=True)
    seen: dict[str, str] = {}

    def decide(output: str) -> bool:
        found = re.search(r"iris approve (a-[0-9a-f]+)", output)
        if found is None:
            return False
        approval = found.group(1)
        (tell_id,) = [a["tell_id"] for a in iris.cli_json("approvals") if a["id"].startswith(approval)]
        shown = iris.cli("result", tell_id)
        seen["result"] = shown.stderr
        seen["json"] = iris.cli("result", tell_id, "--json").stdout
        approve = iris.cli("approve", approval)
        assert approve.returncode == 0, approve.stderr
        return True

    try:
        code, output = iris.cli_pty("tell", "alpha", TOUCH, react=decide)
    finally:
        deny_what_is_left(iris)
    assert code == 0, output
    assert (folder / "made.txt").exists()
    # the live status line: a spinner, the phase, the time
    assert re.search(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] (starting claude|waiting for the model) · \d+s", output), output
    assert "awaiting your approval: Bash `touch made.txt`" in output
    assert re.search(r"iris approve a-[0-9a-f]{8} \[--remember\]  \|  iris deny a-[0-9a-f]{8} --reason", output), output
    assert "tool Bash said:" in output
    # iris result says what its --json says
    assert "awaiting_approval · awaiting your approval: Bash `touch made.txt`" in seen["result"], seen
    assert '"tell_status": "awaiting_approval"' in seen["json"]
    assert '"name": "awaiting_approval"' in seen["json"] and '"approval_id": "a-' in seen["json"]


def test_without_a_terminal_the_approval_commands_still_reach_stderr(shared: Iris) -> None:
    iris = shared
    with subprocess.Popen(
        [sys.executable, "-m", "iris_cli", "tell", "alpha", TOUCH],
        env=iris.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=iris.root,
    ) as tell:
        assert tell.stderr is not None
        try:
            line = tell.stderr.readline()
            assert line.startswith("awaiting your approval: Bash `touch made.txt`"), line
            approval = re.findall(r"iris deny (a-[0-9a-f]+)", tell.stderr.readline())[0]
            assert iris.cli("deny", approval, "--reason", "not now").returncode == 0
        finally:
            deny_what_is_left(iris)
        out, _ = tell.communicate(timeout=120)
    assert tell.returncode == 0 and "tool Bash failed:" in out and "not now" in out


def test_root_with_skip_is_refused_up_front_naming_the_fix(shared: Iris) -> None:
    iris = shared
    result = iris.cli("tell", "skipping", "hi")
    if os.geteuid() == 0:  # claude itself refuses: Iris says so before trying
        assert result.returncode == 1
        assert "refuses to run as root" in result.stderr and "IS_SANDBOX=1" in result.stderr
        assert "keeps crashing" not in result.stderr and "new conversation" not in result.stderr
        assert iris.cli_json("report", "skipping") == []  # nothing was queued
    else:
        assert result.returncode == 0 and result.stdout == "echo #1: hi\n"
    assert root_skip_problem("alpha", "skip", euid=0, env={}) is not None
    assert root_skip_problem("alpha", "skip", euid=0, env={"IS_SANDBOX": "1"}) is None
    assert root_skip_problem("alpha", "skip", euid=1000, env={}) is None
    assert root_skip_problem("alpha", "ask", euid=0, env={}) is None


def test_init_irisd_and_a_tell_work_with_no_edit_to_path_or_config(iris: Iris, tmp_path: Path) -> None:
    """The README's path: scripts/install, iris init, irisd, iris tell; the pinned claude
    is found next to the installation (scripts/install links it into .venv/bin)."""
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "claude").exists(), "scripts/install links the pinned claude into .venv/bin"
    team = tmp_path / "project"
    team.mkdir()
    env = {k: v for k, v in iris.env.items() if k not in ("IRIS_CLAUDE_BIN",)}
    env["PATH"] = "/usr/bin:/bin"  # no .venv/bin, no claude
    # --http-port 0: the user's own irisd may hold 1615 on this machine (the README starts one there).
    init = subprocess.run(
        [str(bin_dir / "iris"), "init", "--team", f"a={team}", "--http-port", "0"], env=env, capture_output=True,
        text=True,
    )
    assert init.returncode == 0, init.stderr
    assert "iris tell a" in init.stdout
    config = (iris.home / "config.yaml").read_text()
    assert f'claudePath: "{bin_dir / "claude"}"' in config and "httpPort: 0" in config
    log_path = tmp_path / "irisd.log"
    with log_path.open("wb") as log:
        daemon = subprocess.Popen([str(bin_dir / "irisd")], env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for_daemon(daemon, iris.socket, log_path)
        code, output = run_in_pty([str(bin_dir / "iris"), "tell", "a", "hi"], env=env, cwd=tmp_path)
        assert code == 0, output + (tmp_path / "irisd.log").read_text()
        assert "echo #1: hi" in output
    finally:
        daemon.terminate()
        daemon.wait(30)


def test_doctor_says_what_works_and_what_to_fix(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    code, output = iris.cli_pty("doctor")
    output = plain(output)
    assert code == 0, output
    tested = claude_under_test_version() == CLAUDE_VERSION  # else a newer one, under IRIS_CLAUDE_VERSION
    assert ("✓ claude" if tested else "! claude") in output and claude_under_test_version() in output
    assert re.search(r"✓ irisd +running \(pid \d+", output)
    assert re.search(r"✓ HTTP face +http://127\.0\.0\.1:\d+ answers", output), output
    assert "all good" in output
    iris.stop()
    (iris.home / "config.yaml").write_text("teams: {}\n")
    code, output = iris.cli_pty("doctor", columns=200)
    output = plain(output)
    assert code == 1
    assert "✗ config" in output and "no teams are configured" in output and "iris init --force --team" in output
    assert "! irisd" in output and "iris daemon start" in output
    assert "1 problem(s) to fix" in output


def test_a_command_is_checked_against_what_claude_knows_and_shows_its_output(iris: Iris) -> None:
    iris.add_team("alpha")
    iris.start()
    assert iris.cli("tell", "alpha", "hi").returncode == 0  # claude's init line names its commands
    wrong = iris.cli("command", "alpha", "nonsense")
    assert wrong.returncode == 1
    assert "/nonsense is not a command of team alpha's claude" in wrong.stderr and "compact" in wrong.stderr
    assert len(iris.cli_json("report", "alpha")) == 1  # nothing was sent
    # 'external' names you wherever --from is taken, as in 'iris session reset external TEAM'
    assert len(iris.cli_json("report", "alpha", "--from", "external")) == 1
    assert iris.cli("sleep", "alpha", "--from", "external").returncode == 0
    iris.stop()
    iris.start()  # known from the stored transcript after a restart too
    assert "/nonsense is not a command" in iris.cli("command", "alpha", "/nonsense").stderr
    compacted = iris.cli("command", "alpha", "compact")
    assert compacted.returncode == 0, compacted.stderr
    assert compacted.stdout.strip() == "Compacted"


def test_doctor_checks_the_credentials_irisd_gives_its_claude_not_the_shells(shared: Iris) -> None:
    iris = shared  # its environment has the key and ANTHROPIC_BASE_URL (the scripted model)
    shell = {k: v for k, v in iris.env.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
    ran = subprocess.run([sys.executable, "-m", "iris_cli", "doctor", "--json"], env=shell, capture_output=True,
                         text=True, cwd=iris.root, timeout=120)
    checks = {c["name"]: c for c in json.loads(ran.stdout)}
    credentials = checks["credentials"]
    assert credentials["verdict"] == "ok", credentials
    assert credentials["detail"] == "irisd's claude processes get ANTHROPIC_API_KEY (through ANTHROPIC_BASE_URL)"


def test_a_missing_team_folder_makes_that_team_unavailable_and_irisd_serves_the_others(shared: Iris) -> None:
    iris = shared
    later = Path(iris.teams["later"]["path"])  # missing when irisd started
    assert iris.cli_json("tell", "here", "hi")["text"] == "echo #1: hi"
    refused = iris.cli("tell", "later", "hi")
    assert refused.returncode == 1
    assert f"team 'later' is unavailable: its folder {later} does not exist; create it" in refused.stderr
    teams = {t["name"]: t for t in iris.cli_json("teams")}
    assert "does not exist" in teams["later"]["unavailable"] and "unavailable" not in teams["here"]
    assert "* team 'later' is unavailable" in iris.cli("status").stdout
    code, output = iris.cli_pty("doctor", columns=200)
    assert code == 1 and "team folders" in output and "team 'later' is unavailable" in output
    later.mkdir()  # no restart needed
    assert iris.cli_json("tell", "later", "hi")["text"] == "echo #1: hi"


def test_irisd_knows_the_claude_it_runs_and_refuses_one_too_old(shared: Iris, iris: Iris) -> None:
    status = shared.cli_json("status")
    assert status["claude_version"] == claude_under_test_version() and status["claude_tested"] == CLAUDE_VERSION
    assert f"claude: {claude_under_test_version()}" in shared.cli("status").stdout
    assert "tested_with" in shared.log() and claude_under_test_version() in shared.log()
    iris.add_team("alpha")  # an irisd of its own, which is to refuse to start
    old = iris.root / "old-claude"
    old.write_text("#!/bin/sh\necho '2.1.100 (Claude Code)'\n")
    old.chmod(0o755)
    iris.settings["claudePath"] = str(old)
    daemon = iris.start(wait=False)
    assert daemon.wait(timeout=60) == 2
    iris.process = None
    assert "claude 2.1.100 is older than 2.1.224, the oldest Iris runs" in iris.log()
