"""The question detector on the corpus, who counts as waiting, and the stored questions."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from irisd.questions.detector import Detector, context_of, nobody_waiting
from irisd.store import questions
from irisd.store.db import open_database
from protocol.messages import QuestionInfo
from unit.question_corpus import CORPUS, HELD_OUT, WRITTEN


def measure(detector: Detector, corpus: list[tuple[str, bool]]) -> tuple[float, float, list[str]]:
    """Precision, recall, and the replies it got wrong."""
    tp = fp = fn = 0
    wrong = []
    for text, asks in corpus:
        found = detector.detect(text) is not None
        tp += found and asks
        fp += found and not asks
        fn += asks and not found
        if found != asks:
            wrong.append(text)
    return tp / (tp + fp), tp / (tp + fn), wrong


def test_the_corpus_is_large_and_balanced() -> None:
    assert len(CORPUS) >= 200 and len(WRITTEN) >= 100
    asking = sum(label for _, label in CORPUS)
    assert 0.35 < asking / len(CORPUS) < 0.65
    assert len({text for text, _ in CORPUS + HELD_OUT}) == len(CORPUS) + len(HELD_OUT)  # no duplicates


def test_precision_and_recall_on_the_corpus() -> None:
    """The figures in the README: 1.00 / 1.00 on the tuning corpus (216 replies)."""
    precision, recall, wrong = measure(Detector(), CORPUS)
    assert (precision, recall) == (1.0, 1.0), wrong


def test_precision_and_recall_on_the_held_out_replies() -> None:
    """The README's held-out figures: precision 1.00, recall 0.79 (15 of 19) on 40 replies."""
    precision, recall, wrong = measure(Detector(), HELD_OUT)
    assert precision == 1.0, wrong
    assert recall >= 0.78, wrong


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("Found 3 errors. Should I fix them? (y/n)", "y/n"),
        ("Would you like me to add tests as well?", "offer?"),
        ("The plan is ready. Should I proceed with step 2?", "proceed?"),
        ("Waiting for your approval before I drop the table.", "confirm"),
        ("Let me know which option you prefer.", "let me know which"),
        ("Which one?\n\n- Redis\n- Memcached", "question?"),
    ],
)
def test_rules_name_themselves(text: str, rule: str) -> None:
    found = Detector().detect(text)
    assert found is not None and found.pattern == rule and 0 < found.confidence <= 1


def test_the_question_is_the_asking_sentence_with_what_it_refers_to() -> None:
    found = Detector().detect("I looked at the logs.\n\nFound 3 errors. Should I fix them? (y/n)")
    assert found is not None and found.question == "Should I fix them? (y/n)"


def test_code_urls_quotes_and_pleasantries_ask_nothing() -> None:
    detector = Detector()
    for text in (
        "```js\nconst x = ok ? 1 : 2;\nwhy?\n```",
        "Docs: https://example.com/search?q=a",
        "> Should we ship?\n\nShipped.",
        "Done. Anything else?",
        "Let me know if you have any other questions.",
        "",
    ):
        assert detector.detect(text) is None, text


def test_configured_patterns_come_first_and_builtins_can_be_turned_off() -> None:
    only_mine = Detector([r"\bTODO\(you\)"], builtin=False)
    assert only_mine.detect("Should I continue?") is None
    found = only_mine.detect("Refactored. TODO(you): pick the name.")
    assert found is not None and found.pattern == r"\bTODO\(you\)" and found.confidence == 0.9
    both = Detector([r"\bover to you\b"])
    assert both.detect("Should I continue?") is not None
    assert both.detect("Done, over to you.") is not None


def test_context_keeps_the_end_of_a_long_answer() -> None:
    long = "x" * 5000 + " Should I go on?"
    assert context_of(long).endswith("Should I go on?") and len(context_of(long)) <= 1501


@pytest.mark.parametrize(
    ("kind", "got_end", "left", "waiters", "unread"),
    [
        ("tell", True, False, 0, False),  # a caller that waited got the answer
        ("tell", False, False, 0, True),  # --timeout -1 / N, an MCP call past its wait
        ("tell", True, True, 0, True),  # the caller hung up before the end
        ("notification", True, False, 0, True),  # --persist: irisd delivered it, nobody reads
        ("tell", False, False, 1, False),  # ... unless 'iris result --wait' waits for it now
        ("notification", True, False, 2, False),
    ],
)
def test_who_waits_for_an_answer(kind: str, got_end: bool, left: bool, waiters: int, unread: bool) -> None:
    assert nobody_waiting(kind=kind, caller_got_end=got_end, caller_left=left, result_waiters=waiters) is unread


@pytest.fixture
def db(tmp_path: Path) -> apsw.Connection:
    return open_database(tmp_path / "iris.db")


def question(qid: str, *, from_team: str | None = None, created: float = 1.0, expires: float = 100.0) -> QuestionInfo:
    return QuestionInfo(id=qid, from_team=from_team, to_team="alpha", session_id="s", tell_id="t", question="Go?",
                        context="Go?", confidence=0.9, status="pending", created_at=created, expires_at=expires)


def test_a_question_is_closed_once(db: apsw.Connection) -> None:
    questions.insert(db, question("q-1"))
    closed = questions.close(db, "q-1", "answered", 5.0, by="me", answer="yes")
    assert closed is not None and closed.status == "answered" and closed.answer == "yes" and closed.closed_at == 5.0
    assert questions.close(db, "q-1", "dismissed", 6.0) is None  # already answered
    questions.reopen(db, "q-1")
    reopened = questions.get(db, "q-1")
    assert reopened is not None and reopened.status == "pending" and reopened.answer == ""


def test_listing_filters_by_team_caller_and_status(db: apsw.Connection) -> None:
    questions.insert(db, question("q-1", from_team=None, created=1.0))
    questions.insert(db, question("q-2", from_team="beta", created=2.0))
    questions.close(db, "q-2", "dismissed", 3.0)
    assert [q.id for q in questions.listing(db, None, False)] == ["q-1"]
    assert [q.id for q in questions.listing(db, None, True)] == ["q-2", "q-1"]
    assert [q.id for q in questions.listing(db, "beta", True)] == ["q-2"]
    assert [q.id for q in questions.listing(db, None, True, "external")] == ["q-1"]
    assert questions.listing(db, None, True, "beta")[0].from_team == "beta"


def test_pending_questions_expire_at_their_ttl(db: apsw.Connection) -> None:
    questions.insert(db, question("q-1", expires=10.0))
    questions.insert(db, question("q-2", expires=20.0))
    assert questions.next_expiry(db) == 10.0
    expired = questions.expire(db, 15.0)
    assert [q.id for q in expired] == ["q-1"] and expired[0].status == "expired"
    assert questions.next_expiry(db) == 20.0
    assert questions.expire(db, 15.0) == []
