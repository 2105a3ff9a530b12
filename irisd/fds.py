"""irisd's file descriptors: how many its clients may hold, so that enough are always left
to spawn claude children (each holds three pipes, six descriptors while it starts), and
what to say when they run out anyway.

The open-file limit (``ulimit -n``, systemd's ``LimitNOFILE=``) is shared out as:
``FDS_FOR_THE_REST`` for claude children, the database and the logs; the Unix socket's
clients (``irisd/socket_server.py``); the HTTP face's connections (``http_connection_limit``),
what remains, at most ``MAX_HTTP_CONNECTIONS``. A client past its share waits in the
kernel's listen queue, costing irisd nothing.
"""

from __future__ import annotations

import errno
import resource

FDS_FOR_THE_REST = 256  # of the open-file limit: claude pipes, the database, logs
MAX_HTTP_CONNECTIONS = 512
MIN_HTTP_CONNECTIONS = 64  # with a tiny limit, still room for the owner past a few clients
# accept() failing for lack of resources: back off and retry, never give up.
CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})


def open_file_limit() -> int | None:
    """irisd's soft open-file limit (None: unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def http_connection_limit(soft_limit: int | None, socket_clients: int) -> int:
    """How many HTTP connections irisd holds at once, given its open-file limit and the
    Unix socket's share (``socket_clients``)."""
    if soft_limit is None:
        return MAX_HTTP_CONNECTIONS
    left = soft_limit - FDS_FOR_THE_REST - socket_clients
    return max(MIN_HTTP_CONNECTIONS, min(MAX_HTTP_CONNECTIONS, left))


def out_of_descriptors(code: int | None, soft_limit: int | None) -> str | None:
    """What to tell the user when an ``OSError`` with ``code`` means no descriptor was
    left (None: it is something else)."""
    if code == errno.EMFILE:
        limit = "" if soft_limit is None else f" (its limit is {soft_limit})"
        return (
            f"irisd is out of file descriptors{limit}; raise its open-file limit (LimitNOFILE= in "
            "irisd.service, or 'ulimit -n' in the shell that starts irisd) and restart it, or close "
            "programs that hold many connections to irisd"
        )
    if code == errno.ENFILE:
        return (
            "the system is out of file descriptors (every process together); close programs "
            "that hold many files, or raise fs.file-max (sysctl)"
        )
    return None
