"""irisd keeps the memory of large buffers for the next ones (``irisd.main.keep_freed_memory``):
a page of a long transcript (rows, their bytes joined, its frame) made again and again
faults no memory in from the kernel. In a subprocess: malloc's settings are the process's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PAGES = """
import resource, sys
from irisd.main import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()

def page() -> int:  # what irisd holds for a page of a transcript: rows, joined, a frame
    rows = [bytes(64 * 1024) for _ in range(5)]
    joined = b"".join(rows)
    return len(bytearray(4) + joined)

page()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(100):
    page()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", PAGES, mode], cwd=REPO, capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_a_hundred_pages_fault_in_no_memory_once_irisd_keeps_it() -> None:
    assert faults("default") > 100 * 64  # glibc gives a large buffer back at once: its pages fault in anew
    assert faults("keep") < 100
