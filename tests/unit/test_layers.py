"""The rules of the code's shape that a check keeps: imports by name obey the layers, and
the README's code map names every package and module."""

from __future__ import annotations

import re
from pathlib import Path

from iris_cli.app import COMMANDS

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("protocol", "iris_common", "iris_mcp", "irisd", "iris_cli", "scripted_model")


def test_the_cli_loads_by_name_only_modules_of_its_own_layer() -> None:
    # lint-imports cannot see an import by name: these stay inside iris_cli, whose own
    # imports it does check (never irisd).
    for command, target in COMMANDS.items():
        module = target.split(":")[0]
        assert module.startswith("iris_cli."), f"iris {command} loads {module}, outside iris_cli"
        path = REPO / (module.replace(".", "/") + ".py")
        assert path.is_file(), f"iris {command} names {module}, which does not exist"


def _code_map() -> str:
    readme = (REPO / "README.md").read_text()
    start = readme.index("Code map")
    return readme[start : readme.index("\n## ", start)]


def _modules() -> list[str]:
    """Every package and module of Iris, as dotted names (``__init__`` and ``__main__`` aside)."""
    found = []
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            relative = path.relative_to(REPO).with_suffix("")
            if relative.name in ("__init__", "__main__"):
                relative = relative.parent
            if "static" in relative.parts or "__pycache__" in relative.parts:
                continue
            found.append(".".join(relative.parts))
    return sorted(set(found))


def test_the_readme_code_map_names_every_package_and_module() -> None:
    named = set(re.findall(r"`([A-Za-z_][\w./]*)`?", _code_map()))
    words = {part for name in named for part in re.split(r"[/.]", name)}
    missing = [module for module in _modules() if module.split(".")[-1] not in words]
    assert not missing, f"README's code map (section 'How it works') does not name: {', '.join(missing)}"


def test_the_readme_names_every_test_folder() -> None:
    code_map = _code_map()
    folders = sorted(p.name for p in (REPO / "tests").iterdir() if p.is_dir() and (p / "__init__.py").exists())
    missing = [folder for folder in folders if f"`{folder}`" not in code_map]
    assert not missing, f"README's code map does not name the test folders {missing}"


def test_the_dispatcher_stays_a_table_and_nothing_reads_the_config_through_it() -> None:
    # Handlers live in the services that own them (irisd/status.py, records.py, pairs.py,
    # questions/answering.py, the supervisor); the config is core.Services' holder.
    lines = (REPO / "irisd" / "dispatch.py").read_text().count("\n")
    assert lines < 300, f"irisd/dispatch.py has {lines} lines: move handlers to their services"
    readers = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted((REPO / "irisd").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "dispatcher.config" in line
    ]
    assert not readers, f"the config is read through the dispatcher at {readers}; read core.Services' holder"
