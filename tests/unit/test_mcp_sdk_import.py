"""irisd imports only the MCP SDK's server parts for /mcp (iris_mcp/sdk.py), and the rest
of the SDK still works afterwards in the same process."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import sys
from iris_mcp.sdk import import_server  # it loads the SDK lean (iris_mcp/sdk.py), as irisd does for /mcp
import_server(http=True)
loaded = sorted(m for m in sys.modules if m.startswith(("mcp.client", "mcp.server.mcpserver")))
assert not loaded, loaded
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from iris_mcp.shim import build_server
from mcp import ClientSession  # runs the package's own __init__ now
from mcp.server import MCPServer
print(ClientSession.__module__, MCPServer.__name__, StreamableHTTPSessionManager.__name__, build_server.__name__)
"""


def test_irisd_loads_the_server_parts_alone_and_the_rest_on_demand() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "mcp.client.session", "MCPServer", "StreamableHTTPSessionManager", "build_server"
    ]
