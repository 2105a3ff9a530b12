"""The ``iris`` command line (Typer + rich) and the stdio ``iris mcp`` server: clients of irisd.

Layering (enforced by ``lint-imports``, contracts in pyproject.toml): may import
``iris_mcp``, ``iris_common`` and ``protocol``; never ``irisd`` (it talks to the daemon over
its socket, and starts it as a process).
"""
