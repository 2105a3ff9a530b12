"""Where Iris's home and socket are, as strings read from the environment (stdlib ``os``
only): ``iris_common.paths.IrisPaths`` is built from them, and the CLI's client finds the
socket with them without importing ``pathlib`` and ``dataclasses`` (a quarter of what a
bare ``python -c pass`` costs, on every ``iris status``).

* ``IRIS_HOME`` (default ``~/.iris``).
* The socket: ``IRIS_SOCKET`` if set, else ``$XDG_RUNTIME_DIR/iris/irisd.sock``,
  else ``$IRIS_HOME/run/irisd.sock``.

Both are absolute (relative values are taken from the working folder), ``~`` expanded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def iris_home(env: Mapping[str, str]) -> str:
    home = env.get("IRIS_HOME") or os.path.join(os.path.expanduser("~"), ".iris")
    return _absolute(os.path.expanduser(home))


def socket_path(env: Mapping[str, str]) -> str:
    if env.get("IRIS_SOCKET"):
        return _absolute(os.path.expanduser(env["IRIS_SOCKET"]))
    if env.get("XDG_RUNTIME_DIR"):
        return _absolute(os.path.join(env["XDG_RUNTIME_DIR"], "iris", "irisd.sock"))
    return os.path.join(iris_home(env), "run", "irisd.sock")


def _absolute(path: str) -> str:
    """As ``Path.absolute``: joined to the working folder, not resolved ('..' stays)."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
