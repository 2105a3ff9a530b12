"""irisd: the long-lived trio daemon that owns every claude process.

Layering (enforced by ``lint-imports``, contracts in pyproject.toml): may import
``iris_mcp``, ``iris_common`` and ``protocol``; never ``iris_cli`` (the CLI is a client).
"""

from iris_common import __version__ as __version__
