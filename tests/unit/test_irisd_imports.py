"""What irisd's start-up does not load: each was a share of its start-up CPU, paid by
every irisd though only some use it (measured with ``python -X importtime -c 'import
irisd.main'``)."""

from __future__ import annotations

import subprocess
import sys

LOADED_LATER = {
    "httpx2": "the webhook client: made with the first webhook notice (irisd/notify/service.py)",
}


def test_irisd_starts_without_what_only_some_irisds_use() -> None:
    probe = "import sys, irisd.main; print('\\n'.join(sorted(sys.modules)))"
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                check=True).stdout.split())
    assert "irisd.daemon" in loaded  # the probe imported irisd
    assert {name for name in LOADED_LATER if name in loaded} == set(), LOADED_LATER
