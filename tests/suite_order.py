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

# Seconds each module's tests took in a full run (``--durations=0``, 4 workers on a quiet
# 2-core machine, 2026-11-27, after the heavy modules shared their daemons, summed per
# module); only their order matters.
MEASURED_S = {
    "tests/e2e/test_mcp_shim.py": 105,
    "tests/e2e/test_mcp_elicitation.py": 100,
    "tests/e2e/test_costs_budgets.py": 72,
    "tests/browser/test_dashboard_page.py": 64,
    "tests/ssh/test_remote_teams.py": 59,
    "tests/e2e/test_a2a_outbound.py": 52,
    "tests/e2e/test_permissions.py": 50,
    "tests/e2e/test_cross_session.py": 50,
    "tests/e2e/test_a2a_tck.py": 50,
    "tests/e2e/test_containment.py": 47,
    "tests/e2e/test_tell_semantics.py": 39,
    "tests/browser/test_dashboard.py": 39,
    "tests/e2e/test_sessions.py": 38,
    "tests/mesh/test_trust.py": 34,
    "tests/ssh/test_ssh_launcher.py": 34,
    "tests/mesh/test_remote_tells.py": 32,
    "tests/e2e/test_a2a_inbound.py": 32,
    "tests/e2e/test_http_mcp.py": 30,
    "tests/e2e/test_spares.py": 28,
    "tests/e2e/test_tell.py": 27,
    "tests/mesh/test_reliability.py": 26,
    "tests/e2e/test_slow_clients.py": 26,
    "tests/mesh/test_directory.py": 24,
    "tests/e2e/test_agent_acts.py": 23,
    "tests/e2e/test_threads.py": 22,
    "tests/e2e/test_session_maintenance.py": 22,
    "tests/e2e/test_mcp_inspector.py": 22,
    "tests/e2e/test_questions.py": 21,
    "tests/e2e/test_first_hour.py": 18,
    "tests/e2e/test_http_api.py": 18,
    "tests/e2e/test_storage.py": 16,
    "tests/e2e/test_mcp_install.py": 16,
}
# Otherwise: seconds per test by kind (the folder under tests/), in the same units.
PER_TEST_S = {"mesh": 5.0, "ssh": 8.0, "e2e": 5.0, "browser": 3.0, "subsystem": 0.3, "unit": 0.02}


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
