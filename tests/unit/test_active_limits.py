"""The HTTP face's requests at once, by caller (irisd/http/gate.py ActiveLimits)."""

from __future__ import annotations

import pytest

from irisd.caller import OWNER, Caller
from irisd.http.gate import ActiveLimits
from protocol.errors import BusyError

ALPHA = Caller.child("alpha", "alpha->beta")
BETA = Caller.child("beta", "beta->alpha")


def test_one_caller_gets_its_share_and_no_more_while_others_still_get_theirs() -> None:
    limits = ActiveLimits(total=10, per_caller=4, owner_room=2)
    for _ in range(4):
        limits.admit(ALPHA)
    with pytest.raises(BusyError, match=r"team 'alpha' \(its claude serving alpha->beta\) already has 4 HTTP"):
        limits.admit(ALPHA)
    limits.admit(BETA)
    limits.admit(None)  # the public paths' callers are one caller
    assert limits.active == 6
    limits.release(ALPHA)
    limits.admit(ALPHA)


def test_callers_together_never_take_the_owners_room() -> None:
    limits = ActiveLimits(total=10, per_caller=4, owner_room=2)
    for caller in (ALPHA, ALPHA, ALPHA, ALPHA, BETA, BETA, BETA, BETA):
        limits.admit(caller)
    with pytest.raises(BusyError, match="8 HTTP requests at once for callers other than its owner"):
        limits.admit(Caller.reader())
    limits.admit(OWNER)
    limits.admit(Caller())  # another owner request: the same caller
    with pytest.raises(BusyError, match="irisd serves 10 HTTP requests at once, its limit"):
        limits.admit(OWNER)
    for _ in range(2):
        limits.release(OWNER)
    limits.release(BETA)
    limits.admit(Caller.reader())
    assert limits.active == 8


def test_the_owner_may_use_every_place() -> None:
    limits = ActiveLimits(total=3, per_caller=1, owner_room=1)
    for _ in range(3):
        limits.admit(OWNER)
    with pytest.raises(BusyError):
        limits.admit(ALPHA)
