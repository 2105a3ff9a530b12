"""The Iris wire protocol: msgspec Structs, framing and errors. Pure: no I/O, no trio.

Layering (enforced by ``lint-imports``, contracts in pyproject.toml): the bottom layer;
imports nothing of Iris, only msgspec and the standard library.
"""

PROTOCOL_VERSION = 1
