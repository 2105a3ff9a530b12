"""What irisd's start-up does not load: each was a share of its start-up CPU, paid by
every irisd though only some use it (measured with ``python -X importtime -c 'import
irisd.main'``)."""

from __future__ import annotations

import subprocess
import sys

LOADED_LATER = {
    "httpx2": "the webhook client: made with the first webhook notice (irisd/notify/service.py)",
    "jeepney": "the D-Bus client of desktop notices (irisd/notify/desktop.py, about 6 ms): with the first "
               "desktop notice, where irisd has a session bus",
    "iris_mcp.tools": "the MCP tools' table (about 4 ms): a child's and iris-agent's argv name the tools, "
                      "so it comes with the first claude started (irisd/claude/command.py, irisd/agent/runner.py)",
    "hypercorn": "the HTTP face's server (with starlette, about 110 ms: a quarter of irisd's start-up): its "
                 "socket is bound at start, the face loaded by its first client, child or the MCP preload "
                 "(irisd/http/door.py)",
    "starlette": "the HTTP face's app: loaded with hypercorn (irisd/http/door.py)",
    "irisd.http.app": "the HTTP face's routes: loaded with hypercorn (irisd/http/door.py)",
}


def _probe(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_irisd_starts_without_what_only_some_irisds_use() -> None:
    loaded = set(_probe("import sys, irisd.main; print('\\n'.join(sorted(sys.modules)))").split())
    assert "irisd.daemon" in loaded  # the probe imported irisd
    assert {name for name in LOADED_LATER if name in loaded} == set(), LOADED_LATER


def test_irisd_s_modules_build_no_dataclass_at_import() -> None:
    """A dataclass costs about 0.6 ms of CPU to build (its methods are generated as source
    and compiled); a msgspec Struct about 0.015 ms. irisd had 104 at its start."""
    probe = (
        "import dataclasses, sys, irisd.main\n"
        "for name, module in sorted(sys.modules.items()):\n"
        "    if name.split('.')[0] in ('irisd', 'iris_common', 'protocol'):\n"
        "        for key, value in vars(module).items():\n"
        "            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == name:\n"
        "                print(f'{name}.{key}')\n"
    )
    assert _probe(probe).split() == []


def test_the_question_rules_are_compiled_with_the_first_answer_looked_at() -> None:
    """The built-in question rules are 17 large regular expressions (about 6 ms to compile),
    and most tells end with a caller reading the answer: the desk's detector, made at
    start, compiles them only when it first looks at an answer."""
    probe = (
        "from irisd.questions.detector import Detector, builtin_rules\n"
        "detector = Detector()\n"
        "print(builtin_rules.cache_info().currsize)\n"
        "detector.detect('Shall I go on?')\n"
        "print(builtin_rules.cache_info().currsize)\n"
    )
    assert _probe(probe).split() == ["0", "1"]
