"""Reloading config.yaml in process (fake children): a reload after a team's removal."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from fakes.core import running_core
from iris_common.config import IrisConfig, load_config
from irisd.logs import recent_problems
from protocol.errors import ConfigError
from protocol.messages import WakeAll


def write_config(tmp_path: Path, teams: str, settings: str = "") -> IrisConfig:
    (tmp_path / "alpha").mkdir(exist_ok=True)
    entries = "".join(f"  {name}:\n    path: {tmp_path / 'alpha'}\n" for name in teams.split())
    # no claude to find: the reload checks none, and the fake children need none
    settings = f"  claudePath: {tmp_path / 'no-claude'}\n{settings}"
    (tmp_path / "config.yaml").write_text(f"settings:\n{settings}teams:\n{entries}")
    return load_config(tmp_path / "config.yaml")


async def test_a_reload_after_a_team_was_removed_still_applies(tmp_path: Path) -> None:
    async with running_core(tmp_path, write_config(tmp_path, "alpha beta")) as core:
        await core.supervisor.pair(None, "beta")  # a pair of beta, kept after beta goes
        write_config(tmp_path, "alpha")
        assert await core.reload() == ["team beta removed: its pairs finish what they hold, then stop"]
        write_config(tmp_path, "alpha", "  maxProcesses: 3\n")  # the next edit, beta long gone
        assert await core.reload() == ["settings.maxProcesses changed: in effect now"]
        assert core.current.config.settings.max_processes == 3 and core.current.problem == ""


async def test_wake_all_lists_no_pair_of_a_removed_team(tmp_path: Path) -> None:
    async with running_core(tmp_path, write_config(tmp_path, "alpha beta")) as core:
        await core.supervisor.pair("alpha", "beta")
        write_config(tmp_path, "alpha")
        await core.reload()
        woken = await core.pairs.wake_all(WakeAll(from_team="alpha"))  # alpha has no other team to wake now
        assert woken.processes == [] and woken.errors == {}  # was: alpha->beta, stopped


async def test_status_shows_the_last_reloads_outcome_with_its_reason_while_it_stands(tmp_path: Path) -> None:
    root = logging.getLogger()
    root.addHandler(recent_problems)  # as irisd's setup_logging does
    try:
        async with running_core(tmp_path, write_config(tmp_path, "alpha")) as core:
            (tmp_path / "config.yaml").write_text((tmp_path / "config.yaml").read_text() + "  maxProcesse: 3\n")
            with pytest.raises(ConfigError):
                await core.reload()
            said = [e.message for e in (await core.status.status()).recent_errors if "not reloaded" in e.message]
            assert len(said) == 1 and "maxProcesse" in said[0], said  # the reason, not only that it failed
            write_config(tmp_path, "alpha")
            await core.reload()
            await core.reload()
            status = await core.status.status()
            assert status.config_problem == ""
            assert not [e for e in status.recent_errors if "not reloaded" in e.message]  # settled
    finally:
        root.removeHandler(recent_problems)
