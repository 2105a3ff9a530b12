"""The order the suite's modules are handed to the workers (tests/suite_order.py)."""

from __future__ import annotations

from suite_order import MEASURED_S, expected_s, longest_first


def test_a_long_one_test_module_goes_before_many_short_tests() -> None:
    collected = ["tests/unit/test_config.py"] * 50 + ["tests/subsystem/test_http_app.py"] * 51 \
        + ["tests/e2e/test_a2a_tck.py"]
    assert longest_first(collected) == [
        "tests/e2e/test_a2a_tck.py", "tests/subsystem/test_http_app.py", "tests/unit/test_config.py"]


def test_an_unmeasured_module_is_estimated_by_its_kind_and_tests() -> None:
    assert expected_s("tests/e2e/test_new.py", 4) == 20.0
    assert expected_s("tests/mesh/test_new.py", 1) > expected_s("tests/unit/test_new.py", 100)
    measured = MEASURED_S["tests/e2e/test_mcp_install.py"]
    assert expected_s("tests/e2e/test_mcp_install.py", 4) == measured != 20.0  # measured wins


def test_modules_of_equal_cost_keep_their_collection_order() -> None:
    assert longest_first(["tests/unit/test_b.py", "tests/unit/test_a.py", "tests/unit/test_b.py",
                          "tests/unit/test_a.py"]) == ["tests/unit/test_b.py", "tests/unit/test_a.py"]
