"""ssh for a team on another machine: the command lines, the remote wrapper scripts, and what
an exit means. Plain strings, no processes: irisd's launcher runs them, ``iris doctor`` runs the
version check.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

SSH = "ssh"
SSH_FAILED = 255  # ssh's own exit code: it could not connect, or the connection broke
# What ssh says (and exits 255) under ExitOnForwardFailure when the remote sshd cannot listen.
FORWARD_FAILED = re.compile(r"remote port forwarding failed for listen port (\d+)")
# Always on for a remote claude: never prompt (irisd has no terminal), notice a dead
# peer within ~45 s, give up connecting after 15 s, and refuse to run without the forward
# the child needs to reach Iris.
SSH_DEFAULT_OPTIONS = (
    "-T",
    "-o", "BatchMode=yes",
    "-o", "ConnectTimeout=15",
    "-o", "ServerAliveInterval=15",
    "-o", "ServerAliveCountMax=3",
    "-o", "ExitOnForwardFailure=yes",
)

# The remote side of a pair's connection, run by /bin/sh. It first reads what must not
# appear in a command line from the first lines irisd sends: the team's env, then the
# child's MCP config with its token (kept in a 0600 file of a fresh 0700 folder). It
# starts claude in its own
# session (setsid, where there is one) reading from a FIFO, and copies its own stdin (the
# ssh channel) into that FIFO: when the channel closes (irisd stopped the pair, or the
# connection broke), the copy ends and claude's process group is stopped, TERM then KILL.
# When claude ends by itself, the wrapper stops what claude left behind and exits with
# claude's code. The probe prints "resumable" or "new" for a session id.
REMOTE_PRELUDE = r"""
cd -- "$IRIS_FOLDER" 2>/dev/null || {
  echo "iris: the folder $IRIS_FOLDER does not exist on $(hostname) (the team's path)" >&2; exit 97; }
"""

REMOTE_RUN = r"""
command -v -- "$IRIS_CLAUDE" >/dev/null 2>&1 || {
  echo "iris: $IRIS_CLAUDE is not installed on $(hostname)" \
    "(install Claude Code there, or set the team's claudePath)" >&2
  exit 98; }
d=$IRIS_DIR
(umask 077 && mkdir -- "$d" && mkfifo "$d/in") || {
  echo "iris: cannot make the folder $d on $(hostname)" >&2; exit 99; }
trap 'rm -rf "$d"' EXIT
i=0
while [ "$i" -lt "$IRIS_ENV_LINES" ]; do  # the team's env: one NAME=value line each
  IFS= read -r line && export "$line" || exit 99
  i=$((i + 1))
done
if [ -n "$IRIS_MCP" ]; then  # then the child's MCP config, with its token
  IFS= read -r line && (umask 077 && printf '%s\n' "$line" >"$d/mcp.json") || exit 99
fi
S=; command -v setsid >/dev/null 2>&1 && S=setsid
exec 3<&0
$S "$@" <"$d/in" 3<&- &
c=$!
stop() { kill -"$1" -"$c" 2>/dev/null || kill -"$1" "$c" 2>/dev/null; }
( cat <&3 >"$d/in" 2>/dev/null; stop TERM; sleep 3; stop KILL ) </dev/null >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$c"; rc=$?
kill "$w" 2>/dev/null
stop KILL
exit "$rc"
"""

REMOTE_VERSION = r"""
command -v -- "$IRIS_CLAUDE" >/dev/null 2>&1 || {
  echo "iris: $IRIS_CLAUDE is not installed on $(hostname)" \
    "(install Claude Code there, or set the team's claudePath)" >&2
  exit 98; }
"$IRIS_CLAUDE" --version
"""

REMOTE_PROBE = r"""
p=$(pwd -P)
dir=${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects/$(printf %s "$p" | tr -c 'A-Za-z0-9' '-')
if [ -f "$dir/$IRIS_SESSION.jsonl" ]; then echo resumable; else echo new; fi
"""


def remote_script(body: str, variables: Mapping[str, str], argv: Sequence[str] = ()) -> str:
    """One command line for the remote login shell: ``/bin/sh -c BODY`` with the
    variables set and ``argv`` as its arguments, every part quoted."""
    assignments = " ".join(shlex.quote(f"{key}={value}") for key, value in variables.items())
    script = REMOTE_PRELUDE + body
    args = " ".join(shlex.quote(a) for a in argv)
    return f"exec env {assignments} /bin/sh -c {shlex.quote(script)} iris-remote {args}".strip()


def ssh_argv(destination: str, options: Sequence[str], remote_command: str, *extra: str) -> list[str]:
    return [SSH, *SSH_DEFAULT_OPTIONS, *options, *extra, "--", destination, remote_command]


def version_argv(destination: str, options: Sequence[str], *, folder: str, claude_path: str) -> list[str]:
    """``ssh ... HOST`` printing the remote claude's version from the team's folder
    (for ``iris doctor``: host reachable, folder present, claude there, and a reverse
    forward allowed: a port of sshd's choosing, to nothing, is asked for and dropped)."""
    variables = {"IRIS_FOLDER": folder, "IRIS_CLAUDE": claude_path}
    return ssh_argv(destination, options, remote_script(REMOTE_VERSION, variables), "-R", "127.0.0.1:0:127.0.0.1:9")


def describe_exit(destination: str, returncode: int | None, stderr_tail: str, default: str) -> str:
    """What an ssh child's exit means for people: ssh's own failures (no connection, a refused
    forward, a cut link) and the remote wrapper's (no folder, no claude) named as such."""
    said = stderr_tail.strip().splitlines()
    last = said[-1].strip() if said else ""
    if (port := refused_forward(returncode, stderr_tail)) is not None:
        if port == 0:  # sshd was free to choose the port (iris doctor): forwarding is off
            return (
                f"the ssh connection to {destination} could not forward a port back to irisd: its sshd "
                "allows no TCP forwarding (AllowTcpForwarding, PermitListen), which the team's claude needs "
                "to reach Iris"
            )
        return (
            f"the ssh connection to {destination} could not forward port {port} on "
            f"{destination} back to irisd: that port is taken there, or its sshd allows no TCP "
            "forwarding (AllowTcpForwarding, PermitListen); each start picks another random port"
        )
    if returncode == SSH_FAILED:
        why = last or "ssh failed without saying why"
        return f"the ssh connection to {destination} failed: {why}"
    if returncode is not None and returncode < 0:  # the ssh client was killed: so was the link
        return f"the ssh connection to {destination} was cut ({default.replace('claude', 'ssh', 1)})"
    if returncode in (97, 98, 99) and last.startswith("iris: "):
        return last.removeprefix("iris: ") + f" [{destination}]"
    return default



def refused_forward(returncode: int | None, stderr_tail: str) -> int | None:
    """The remote port ssh could not forward back to irisd (it exits 255 then, under
    ExitOnForwardFailure), or None if that is not why it ended."""
    refused = FORWARD_FAILED.search(stderr_tail) if returncode == SSH_FAILED else None
    return int(refused[1]) if refused else None
