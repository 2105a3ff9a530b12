"""The ``iris`` command line (Typer + rich) and the stdio ``iris mcp`` server: clients of irisd.

Layering (enforced by ``lint-imports``, contracts in pyproject.toml): may import
``iris_mcp``, ``iris_common`` and ``protocol``; never ``irisd`` (it talks to the daemon over
its socket, and starts it as a process).
"""


def version_line() -> str:
    """What ``iris --version`` prints (with Typer or without: ``iris_cli.entry``)."""
    from iris_common import __version__
    from protocol import PROTOCOL_VERSION

    return f"iris {__version__} (protocol {PROTOCOL_VERSION})"
