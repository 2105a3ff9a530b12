"""Who a caller speaks as: one rule for every front end.

A caller bound to a team sends as that team; a ``fromTeam`` naming another team is refused,
none is filled in. irisd binds a claude child to its team by the token it minted
(irisd/caller.py); the stdio ``iris mcp`` binds itself by ``--team`` or the team folder it
runs in (iris_mcp/tools.py). Either way the team comes from the connection or the process,
never from the field.
"""

from __future__ import annotations

from protocol.errors import PermissionDeniedError


def sender(bound: str | None, claimed: str | None, who: str, *, fix: str = "leave fromTeam out") -> str | None:
    """The team a caller bound to ``bound`` (None: the external caller) sends as, given the
    ``fromTeam`` it claimed; PermissionDeniedError, naming ``who`` it is and ``fix``, if the
    claim contradicts it."""
    if claimed is None or claimed == bound:
        return bound
    raise PermissionDeniedError(f"fromTeam {claimed!r} is refused: {who}, and a team can speak only as itself; {fix}")
