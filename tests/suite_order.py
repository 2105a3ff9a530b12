"""The order in which test modules are handed to the xdist workers: longest first.

With ``--dist loadscope`` a module is one unit of work, given to the next worker that runs
low. Handed out longest first, the last minute of a run is short modules on every worker,
not one long module on one worker while the other idles. (xdist's own order, most tests
first, put the one-test modules that run longest, the A2A TCK and the MCP Inspector, last.)

A module's expected cost is its measured time where one was measured (below), else an
estimate from its kind and its number of tests. The figures only order the run: a stale one
costs some wall time, never a test."""

from __future__ import annotations

from collections.abc import Sequence

# Seconds each module's slowest tests took in a full run (``--durations=80``, 2 workers, a
# loaded 2-core machine, 2026-11-27); only their order matters.
MEASURED_S = {
    "tests/e2e/test_mcp_install.py": 367,
    "tests/e2e/test_costs_budgets.py": 311,
    "tests/e2e/test_permissions.py": 286,
    "tests/e2e/test_cross_session.py": 220,
    "tests/mesh/test_remote_tells.py": 216,
    "tests/e2e/test_session_maintenance.py": 176,
    "tests/e2e/test_questions.py": 143,
    "tests/mesh/test_directory.py": 125,
    "tests/ssh/test_remote_teams.py": 118,
    "tests/e2e/test_mcp_inspector.py": 117,
    "tests/e2e/test_a2a_tck.py": 115,
    "tests/e2e/test_mcp_claude.py": 106,
    "tests/e2e/test_fan_out_and_ask.py": 99,
    "tests/mesh/test_reliability.py": 97,
    "tests/mesh/test_trust.py": 91,
    "tests/e2e/test_http_mcp.py": 71,
    "tests/e2e/test_slow_clients.py": 63,
    "tests/e2e/test_markup_and_watch.py": 57,
    "tests/e2e/test_reload.py": 57,
    "tests/e2e/test_storage.py": 57,
    "tests/e2e/test_mcp_elicitation.py": 53,
    "tests/e2e/test_service.py": 50,
    "tests/e2e/test_waits.py": 44,
    "tests/browser/test_notifications.py": 37,
    "tests/subsystem/test_storage_faults.py": 34,
    "tests/e2e/test_health.py": 33,
    "tests/e2e/test_daemon_cli.py": 33,
    "tests/e2e/test_first_hour.py": 32,
    "tests/e2e/test_monitor.py": 30,
    "tests/unit/test_mcp_sdk_import.py": 27,
}
# Otherwise: seconds per test by kind (the folder under tests/), in the same loaded units.
PER_TEST_S = {"mesh": 10.0, "ssh": 8.0, "e2e": 5.0, "browser": 3.0, "subsystem": 0.3, "unit": 0.02}


def expected_s(module: str, tests: int) -> float:
    """What running ``module`` (a path under the root, ``tests/KIND/test_x.py``) is expected to cost."""
    if module in MEASURED_S:
        return MEASURED_S[module]
    parts = module.split("/")
    kind = parts[1] if len(parts) > 2 else ""
    return tests * PER_TEST_S.get(kind, 1.0)


def longest_first(modules: Sequence[str]) -> list[str]:
    """The test modules of a collection (each test's module, in collection order, repeats
    included) in the order to run them: longest expected first; ties keep their order."""
    counts: dict[str, int] = {}
    for module in modules:
        counts[module] = counts.get(module, 0) + 1
    return sorted(counts, key=lambda module: -expected_s(module, counts[module]))
