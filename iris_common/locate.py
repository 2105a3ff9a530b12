"""Where the ``claude`` executable is: one answer for irisd, ``iris init``, the demo,
``iris mcp install`` and ``iris doctor``.

``scripts/install`` puts the pinned claude into this checkout's ``.cache/`` and links it
next to the installation's own executables (``.venv/bin/claude``), so an Iris started
from ``.venv/bin`` finds the claude it was tested with even when that folder is not on
PATH. The order: what the user named (``--claude``, ``settings.claudePath`` other than
the default, ``$IRIS_CLAUDE_BIN``), then the one next to this installation, then
``claude`` on PATH, then the checkout's ``.cache`` copy.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

DEFAULT = "claude"  # settings.claudePath when the config names none


def _versions() -> dict[str, str]:
    text = Path(__file__).with_name("claude.versions").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


CLAUDE_VERSION = _versions()["tested"]  # the version Iris is tested with; scripts/install pins it
MINIMUM_VERSION = _versions()["minimum"]  # older is refused
CHECKOUT = Path(__file__).resolve().parents[1]
CACHED = CHECKOUT / ".cache" / "claude-cli" / "node_modules" / ".bin" / "claude"


def next_to_installation() -> Path:
    """``claude`` in the folder of this Python's executables (``.venv/bin``); the
    interpreter's path is not resolved, so a virtualenv's own ``bin`` is the one meant."""
    return Path(sys.executable).parent / "claude"


def _executable(path: str | os.PathLike[str]) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_claude(configured: str | None = None) -> str | None:
    """The absolute path of the claude to run, or ``None`` when there is none.

    ``configured`` is an explicit choice (``--claude``, or ``settings.claudePath``):
    a path is taken as it is, a bare name is looked up on PATH; the default name
    ``claude`` is not a choice and goes through the search below.
    """
    for named in (configured if configured != DEFAULT else None, os.environ.get("IRIS_CLAUDE_BIN")):
        if named:
            found = named if os.sep in named else shutil.which(named)
            return str(Path(found).absolute()) if found and _executable(found) else None
    for candidate in (str(next_to_installation()), shutil.which(DEFAULT), str(CACHED)):
        if candidate and _executable(candidate):
            return str(Path(candidate).absolute())
    return None


def not_found_fix() -> str:
    """How to get a claude, the pinned one first when this is a checkout."""
    if (CHECKOUT / "scripts" / "install").exists():
        return (
            f"run {CHECKOUT / 'scripts' / 'install'} (it installs the pinned claude {CLAUDE_VERSION}), "
            "or set settings.claudePath in config.yaml"
        )
    return (
        f"install Claude Code ('npm install -g @anthropic-ai/claude-code@{CLAUDE_VERSION}') "
        "or set settings.claudePath in config.yaml"
    )


def version_of(output: str) -> tuple[int, ...] | None:
    """``2.1.330 (Claude Code)`` -> (2, 1, 330); None for anything else."""
    word = output.strip().split(" ")[0] if output.strip() else ""
    try:
        return tuple(int(part) for part in word.split("."))
    except ValueError:
        return None


def version_problem(version: str) -> str:
    """Why Iris cannot run this claude version ("" when it can), with the fix."""
    found = version_of(version)
    minimum = version_of(MINIMUM_VERSION)
    if found is None or minimum is None or found >= minimum:
        return ""
    return (
        f"claude {version} is older than {MINIMUM_VERSION}, the oldest Iris runs (it needs "
        f"crossSessionInbound to keep other sessions out of a pair's conversation); install "
        f"{CLAUDE_VERSION}, the version Iris is tested with: {not_found_fix()}"
    )


def claude_version(executable: str, timeout: float = 30.0) -> str:
    """What ``claude --version`` says (``2.1.330``), or "" when it does not run."""
    import subprocess

    try:
        ran = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    word = ran.stdout.strip().split(" ")[0] if ran.returncode == 0 and ran.stdout.strip() else ""
    return word if version_of(word) else ""
