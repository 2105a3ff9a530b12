from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Iris, claude_binary
from iris_cli.scripted_model import ScriptedModel


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return claude_binary()


@pytest.fixture(scope="session")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


@pytest.fixture
def iris(tmp_path: Path, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    """A fresh, isolated Iris (not started: add teams, then ``iris.start()``)."""
    instance = Iris(tmp_path, model_url=model.base_url, claude=claude_bin)
    yield instance
    if instance.process is not None:
        instance.stop(timeout=30)
    shutil.rmtree(instance.socket.parent, ignore_errors=True)
