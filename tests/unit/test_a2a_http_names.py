"""The A2A face reads ProtoJSON as ProtoJSON parsers must, and JSON only."""

from __future__ import annotations

import pytest

from irisd.a2a.inbound.mapping import A2AError
from irisd.http.a2a import _check_content_type, proto_names_accepted
from protocol import a2a


def test_proto_field_names_are_read_as_their_json_names_but_free_form_keys_stay() -> None:
    params = {
        "context_id": "c",
        "page_size": 2,
        "historyLength": 1,
        "message": {"message_id": "m", "metadata": {"my_key": 1}, "parts": [{"data": {"a_b": [{"c_d": 1}]}}]},
        "_private": 1,
    }
    assert proto_names_accepted(params) == {
        "contextId": "c",
        "pageSize": 2,
        "historyLength": 1,
        "message": {"messageId": "m", "metadata": {"my_key": 1}, "parts": [{"data": {"a_b": [{"c_d": 1}]}}]},
        "_private": 1,
    }


JSON_TYPES = [None, b"application/json", b"application/json; charset=utf-8", b"application/a2a+json"]


@pytest.mark.parametrize("value", JSON_TYPES)
def test_a_json_body_or_one_of_no_type_is_read(value: bytes | None) -> None:
    _check_content_type(None if value is None else value.decode())


@pytest.mark.parametrize("value", [b"text/plain", b"application/x-www-form-urlencoded", b""])
def test_another_content_type_is_content_type_not_supported(value: bytes) -> None:
    with pytest.raises(A2AError) as caught:
        _check_content_type(value.decode())
    assert caught.value.code == a2a.CONTENT_TYPE_NOT_SUPPORTED and "application/json" in caught.value.message
