"""Loading the MCP SDK lean.

``mcp/__init__.py`` imports the SDK's client, its CLI and MCPServer, and
``mcp/server/__init__.py`` MCPServer: 12 MiB of irisd's memory and part of ``iris mcp``'s
start-up (measured), for nothing Iris serves with. ``lean()`` lets ``mcp.server.lowlevel``,
``mcp.server.stdio`` and the streamable HTTP manager be imported without those package
``__init__`` files; anyone who later asks the package itself for a name still gets it.
"""

from __future__ import annotations

import importlib.util
import sys
import types


def lean() -> None:
    """Call before the first import of ``mcp``; does nothing once it is imported."""
    defer_package_init("mcp")
    defer_package_init("mcp.server")


def defer_package_init(name: str) -> None:
    """Make package ``name`` importable without running its ``__init__`` until someone
    reads a name from it; ``from mcp import X`` then runs the real ``__init__`` (PEP 562)."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not a package we can defer: import it the usual way
    module = types.ModuleType(name)
    module.__spec__ = spec
    module.__path__ = list(spec.submodule_search_locations)
    module.__package__ = name
    module.__file__ = spec.origin

    def run_init(attribute: str) -> object:
        del module.__dict__["__getattr__"]
        assert spec.loader is not None
        spec.loader.exec_module(module)
        return getattr(module, attribute)

    module.__getattr__ = run_init  # type: ignore[method-assign]
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


def import_server(http: bool = False) -> None:
    """Import what serving with the SDK needs (about 0.8 s of CPU), with ``http`` its
    streamable HTTP transport too: both faces call it in a worker thread, so that their
    event loop serves on meanwhile (the fast calls under way)."""
    lean()
    import mcp.server.lowlevel
    import mcp.shared.message
    import mcp_types  # noqa: F401

    if http:
        import mcp.server.streamable_http_manager  # noqa: F401
