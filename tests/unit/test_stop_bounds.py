"""Stopping irisd fits in its systemd unit: the drain's bound, then the children's stop,
well inside TimeoutStopSec, in the unit of the repository and the one 'iris daemon
install' writes (systemd never needs its SIGKILL)."""

from __future__ import annotations

import re
from pathlib import Path

from iris_cli.systemd_unit import render_service_unit
from irisd.claude.process import ClaudeProcess
from irisd.main import DRAIN_TIMEOUT_S

REPO = Path(__file__).resolve().parents[2]


def stop_timeout(unit: str) -> float:
    found = re.search(r"^TimeoutStopSec=(\d+)$", unit, re.MULTILINE)
    assert found, unit
    return float(found.group(1))


def test_the_units_stop_timeout_leaves_room_past_the_drain_and_the_childrens_stop() -> None:
    defaults = ClaudeProcess.__init__.__kwdefaults__
    assert defaults is not None
    grace = defaults["grace"]  # SIGTERM, this long, SIGKILL
    bound = DRAIN_TIMEOUT_S + grace
    for unit in ((REPO / "systemd" / "irisd.service").read_text(), render_service_unit("/bin/irisd", "/env", {})):
        assert stop_timeout(unit) >= bound + 5, f"TimeoutStopSec must exceed {bound} s with room"
