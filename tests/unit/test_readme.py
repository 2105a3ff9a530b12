"""What README.md tells a reader to run or names is there, as written: the test folders,
the mesh's nats-server in a clone, the Python A2A snippet's names. (Its headless claude
command runs with the real claude in tests/e2e/test_mcp_install.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_the_list_of_test_folders_names_every_one() -> None:
    folders = sorted(p.parent.name for p in (ROOT / "tests").glob("*/test_*.py"))
    listed = README[: README.index("## Using it")]
    assert [f for f in dict.fromkeys(folders) if f"`tests/{f}`" not in listed] == []


def test_the_mesh_set_up_runs_the_nats_server_a_clone_has() -> None:
    commands = [line.strip() for block in blocks(section("Teams on many hosts"), "sh") for line in block.splitlines()]
    servers = [line.split()[0] for line in commands if "nats-server " in line]
    assert servers and set(servers) == {".venv/bin/nats-server"}, servers  # what scripts/install provides
    assert "pip install 'iris[nats-server]'" not in section("Teams on many hosts").split("scripts/install")[0]
    ran = subprocess.run([str(ROOT / servers[0]), "--version"], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 0 and "nats-server" in ran.stdout


def test_the_python_a2a_snippet_defines_every_name_it_uses(tmp_path: Path) -> None:
    (snippet,) = [b for b in blocks(README, "python") if "a2a.client" in b]
    source = tmp_path / "snippet.py"
    source.write_text(snippet)
    checked = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F821,F401", str(source)],
        capture_output=True, text=True, timeout=60,
    )
    assert checked.returncode == 0, checked.stdout
