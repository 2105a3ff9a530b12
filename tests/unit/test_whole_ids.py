"""Any unique prefix of an id stands for the whole id (irisd/whole_ids.py), with plain lookups."""

from __future__ import annotations

import pytest

from irisd.whole_ids import with_whole_ids
from protocol.errors import InvalidRequestError
from protocol.messages import AnswerQuestion, Decide, GetTell, ListTeams, ReadTranscript

KNOWN = {
    "tell": ["0123456789abcdef", "0123ffffffffffff", "89abcdef01234567"],
    "approval": ["a-d72cea" + "0" * 26, "a-d7ffff" + "1" * 26],
    "turn": ["u-aaaabbbbccccdddd"],
}


async def lookup(kind: str, prefix: str) -> list[str]:
    return [i for i in KNOWN.get(kind, []) if i.startswith(prefix)]


async def test_a_unique_prefix_is_the_whole_id() -> None:
    assert await with_whole_ids(GetTell(tell_id="89ab"), lookup) == GetTell(tell_id="89abcdef01234567")
    decided = await with_whole_ids(Decide(approval_id="a-d72c", allow=True), lookup)
    assert isinstance(decided, Decide) and decided.approval_id == KNOWN["approval"][0]
    # an unsolicited turn read like a tell's transcript
    turn = await with_whole_ids(ReadTranscript(tell_id="u-aaaa"), lookup)
    assert turn == ReadTranscript(tell_id="u-aaaabbbbccccdddd")


async def test_an_ambiguous_prefix_lists_the_matches_and_the_rest_goes_on_unchanged() -> None:
    with pytest.raises(InvalidRequestError, match=r"tell id '0123' is ambiguous: it starts 0123456789abcdef, 0123f"):
        await with_whole_ids(GetTell(tell_id="0123"), lookup)
    for unchanged in (GetTell(tell_id="fffff"), GetTell(tell_id="zz"), ListTeams()):  # unknown, no id
        assert await with_whole_ids(unchanged, lookup) == unchanged
    whole = GetTell(tell_id="0123456789abcdef")
    assert await with_whole_ids(whole, lookup) == whole


async def test_an_ambiguous_prefix_from_a_caller_who_does_not_see_every_tell_names_no_id() -> None:
    # A team's claude: the ids its prefix starts may be other pairs' tells.
    with pytest.raises(InvalidRequestError) as refused:
        await with_whole_ids(GetTell(tell_id="0123"), lookup, name_matches=False)
    assert refused.value.message == "tell id '0123' is ambiguous: it starts more than one id; give more of the id"


async def test_a_prefix_too_short_to_stand_for_an_id_says_how_long_one_must_be() -> None:
    # 'iris result 89a' was answered "no tell with id '89a'", though a tell starts so
    with pytest.raises(InvalidRequestError, match=r"tell id '89a' is too short: give at least 4 characters of it"):
        await with_whole_ids(GetTell(tell_id="89a"), lookup)
    with pytest.raises(InvalidRequestError, match=r"approval id 'a-d' is too short"):
        await with_whole_ids(Decide(approval_id="a-d", allow=True), lookup)


async def test_no_id_is_no_prefix_of_every_id() -> None:
    # An answer that names a tell instead of a question (A2A) has no question id to complete.
    answer = AnswerQuestion(tell_id="0123456789abcdef", text="yes")
    assert await with_whole_ids(answer, lookup) == answer
    assert await with_whole_ids(GetTell(tell_id=""), lookup) == GetTell(tell_id="")
