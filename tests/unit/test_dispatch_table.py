"""The dispatcher is a table: every request type of the protocol has its handler."""

from __future__ import annotations

from typing import get_args

from irisd.dispatch import HANDLERS
from protocol.messages import Request


def test_every_request_type_has_exactly_one_handler() -> None:
    assert set(HANDLERS) == set(get_args(Request))
