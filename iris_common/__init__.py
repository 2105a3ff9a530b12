"""What both irisd and the CLI need, below both: paths, reading and checking config.yaml,
the children's environment, money, locating claude, the owner's token file, ssh command lines.

Layering (enforced by ``lint-imports``, contracts in pyproject.toml): imports ``protocol``
and the standard library or declared dependencies only; never ``iris_mcp``, ``irisd`` or
``iris_cli``. Plain functions and data: no trio.
"""

__version__ = "0.1.0"
