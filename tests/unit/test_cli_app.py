"""The CLI's own surface, without a daemon: version, usage errors."""

from __future__ import annotations

from typer.testing import CliRunner

from iris_cli.app import app
from irisd import __version__
from protocol import PROTOCOL_VERSION


def test_version_names_the_release_and_the_protocol() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"iris {__version__} (protocol {PROTOCOL_VERSION})\n"


def test_a_missing_argument_is_a_usage_error_naming_it() -> None:
    result = CliRunner().invoke(app, ["tell"])
    assert result.exit_code == 2 and "Missing argument 'TEAM'" in result.output


def test_dash_h_is_help_everywhere_including_mcp() -> None:
    for args in (["-h"], ["tell", "-h"], ["mcp", "-h"], ["daemon", "logs", "-h"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0 and "Usage: iris" in result.output, args
