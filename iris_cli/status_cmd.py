"""``iris status``: the command people run most, so it starts with no Typer and no rich
(``iris_cli.entry`` runs it directly; ``iris status --help`` still goes through Typer)."""

from __future__ import annotations

import sys


def run_status(as_json: bool) -> int:
    """Print irisd's status (plain lines, or JSON); the exit code: 1 when irisd is not running."""
    import msgspec

    from iris_cli.client import Client
    from protocol.errors import IrisError
    from protocol.status_messages import GetStatus, StatusReply  # not protocol.messages: these alone are made

    try:
        with Client() as client:
            reply = client.request(GetStatus(), expect=(StatusReply,))
    except IrisError as exc:
        if as_json:
            import json

            body = {"running": False, "message": exc.message} if exc.code == "daemon_not_running" else {
                "error": {"code": exc.code, "message": exc.message}}
            print(json.dumps(body), file=sys.stdout if exc.code == "daemon_not_running" else sys.stderr)
        else:
            print(f"error: {exc.message}", file=sys.stderr)
        return 1
    assert isinstance(reply, StatusReply)
    if as_json:
        import json  # only here: the plain lines need none of it

        print(json.dumps({"running": True, **msgspec.to_builtins(reply)}, indent=2, ensure_ascii=False))
    else:
        from iris_cli.plain import print_status  # no rich: it costs more than the rest

        print_status(reply)
    return 0
