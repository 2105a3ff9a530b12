"""The Iris MCP tools, once: their argument Structs (which give the JSON Schema and the
validation), the tool definitions and the read-only and children's tool sets
(``tools``), the rendering of replies for a model (``tools``), and the ``Shim`` that runs
them over a ``Link`` (``server``). The stdio ``iris mcp`` (iris_cli) and irisd's ``/mcp``
both serve this same code, and both answer what a client of the 2026-07-28 era sends
without importing the SDK (``fastpath`` reads it, ``fastcall`` runs a ``tools/call``): the
stdio one on its own transport (``stdio``), irisd's in ``irisd/http/mcp.py``.

Layering (enforced by ``lint-imports``, contracts in pyproject.toml): may import
``iris_common`` and ``protocol``; never ``irisd`` or ``iris_cli`` (a ``Link`` is handed in).
"""
