"""The systemd user units of irisd, as text: ``irisd.service`` and ``irisd.socket``.

Pure: no file is written and no ``systemctl`` runs here (``iris_cli.daemon_control``
does both). The reference copies in ``systemd/`` are these functions' output for a
``pip install --user`` (a test keeps them equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

SERVICE_UNIT = "irisd.service"
SOCKET_UNIT = "irisd.socket"

# The units as committed in systemd/ (for a pip --user install); 'iris daemon install'
# writes them with this installation's irisd and environment instead.
REFERENCE_EXEC_START = "%h/.local/bin/irisd"
REFERENCE_ENVIRONMENT_FILE = "%h/.iris/irisd.env"
REFERENCE_LISTEN = "%t/iris/irisd.sock"


def render_service_unit(exec_start: str, environment_file: str, environment: Mapping[str, str]) -> str:
    """irisd.service; ``exec_start`` and ``environment_file`` are in unit syntax already."""
    env_lines = "".join(
        f"Environment={systemd_quote(f'{key}={value}', dollar=False)}\n" for key, value in environment.items()
    )
    return f"""\
# irisd, the Iris daemon, as a systemd user service; started by irisd.socket on the
# first connection. 'iris daemon install' writes it to ~/.config/systemd/user/.
[Unit]
Description=Iris daemon: lets the Claude Code agents of your projects talk
Requires=irisd.socket
After=irisd.socket
# Give up after 5 failed starts in 5 minutes ('systemctl --user reset-failed irisd').
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
# READY=1 once the socket and the database are open; WATCHDOG=1 from the event loop
# every WatchdogSec/2, so a stalled loop gets irisd restarted.
Type=notify
WatchdogSec=30
ExecStart={exec_start}
# 'systemctl --user reload irisd': SIGHUP, read config.yaml again without a restart (as 'iris reload').
ExecReload=/bin/kill -HUP $MAINPID
{env_lines}# Credentials claude needs (ANTHROPIC_API_KEY=...) can go in this file (keep it 0600).
EnvironmentFile=-{environment_file}
# On SIGTERM irisd drains by itself: tells recorded interrupted, every claude's process
# group stopped. Whatever is left after TimeoutStopSec gets SIGKILL.
KillMode=mixed
TimeoutStopSec=20
Restart=on-failure
RestartSec=2
# systemd 254+: back off from 2 s to 60 s over 5 restarts (older versions ignore these).
RestartSteps=5
RestartMaxDelaySec=60
# Exit code 2: bad configuration or an unsafe socket folder; a restart cannot fix it.
RestartPreventExitStatus=2
UMask=0077
# No MemoryDenyWriteExecute= (claude runs on Node, whose JIT needs it) and no
# ProtectHome= (the agents work in your projects under your home folder).

[Install]
WantedBy=default.target
Also=irisd.socket
"""


def render_socket_unit(listen: str) -> str:
    return f"""\
# The Iris socket: systemd listens, and starts irisd.service on the first connection.
[Unit]
Description=Iris daemon socket

[Socket]
ListenStream={listen}
SocketMode=0600
DirectoryMode=0700

[Install]
WantedBy=sockets.target
"""


def systemd_quote(value: str, *, dollar: bool = True) -> str:
    """One word of a unit file, quoted only when needed; '%' (and '$' in command lines)
    doubled so systemd takes them literally."""
    escaped = value.replace("%", "%%")
    if dollar:
        escaped = escaped.replace("$", "$$")
    if not any(c in escaped for c in ' \t"\\\''):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_path(path: Path) -> str:
    """A path for ListenStream= or EnvironmentFile= (taken verbatim but for specifiers)."""
    return str(path).replace("%", "%%")
