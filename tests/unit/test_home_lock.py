"""One irisd per Iris home."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from irisd.home_lock import HomeInUseError, hold_home_lock


def test_a_second_holder_is_refused_with_the_first_ones_pid(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with hold_home_lock(data):
        assert (data / "irisd.lock").read_text() == f"{os.getpid()}\n"
        refusal = re.escape(f"another irisd (pid {os.getpid()}) is using {data}; stop it first")
        with pytest.raises(HomeInUseError, match=refusal), hold_home_lock(data):
            pass
    with hold_home_lock(data):  # released on exit: free again
        pass
