"""Team and model text is text, in every command that prints it: rich markup in a message,
an answer, an error, a tool's input or a reason (``[/code]``, ``list[int]``, ``[bold]``) is
printed as written, never read as style, and never crashes a command.

Each command runs in process (Typer's runner) against a stand-in for irisd's socket client
that answers with canned replies full of such text. (tests/e2e/test_markup_and_watch.py does
the same for a few commands with the real daemon and claude.)"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any

import msgspec
import pytest
from typer.testing import CliRunner

from iris_cli import render
from iris_cli.app import app
from protocol.messages import (
    AnswerReply,
    ApprovalEvent,
    ApprovalInfo,
    ApprovalReply,
    ApprovalsReply,
    AskReply,
    CostRow,
    CostsReply,
    CountReply,
    FanOutEvent,
    FanOutResult,
    NotificationInfo,
    NotificationsReply,
    PairReply,
    ProcessInfo,
    QuestionEvent,
    QuestionInfo,
    QuestionsReply,
    ReloadReply,
    ReportReply,
    RuleInfo,
    RulesReply,
    StatusReply,
    TeamInfo,
    TeamsReply,
    TellInfo,
    TellNotice,
    TellReply,
    TellsReply,
    TellState,
    TellText,
    TranscriptEntry,
    TranscriptReply,
    UnsolicitedEvent,
    UnsolicitedInfo,
    Watching,
)

HOSTILE = "see [/code] and list[int] and [bold]not bold[/bold] [red]"
MARKS = ("[/code]", "list[int]", "[bold]not bold[/bold]")
NOW = time.time()

TELL = TellInfo(id="t" * 16, from_team=None, to_team="alpha", message=HOSTILE, status="failed", text=HOSTILE,
                error=HOSTILE, created_at=NOW, started_at=NOW, finished_at=NOW + 1)
APPROVAL = ApprovalInfo(id="a" * 16, from_team=None, to_team="alpha", tell_id=TELL.id, tool_name="Bash",
                        input={"command": HOSTILE, "description": HOSTILE}, status="denied", created_at=NOW,
                        expires_at=NOW + 60, decided_by="me", reason=HOSTILE)
PENDING = msgspec.structs.replace(APPROVAL, status="pending", reason="", decided_by="")
QUESTION = QuestionInfo(id="q" * 16, from_team=None, to_team="alpha", session_id="s", tell_id=TELL.id,
                        question=HOSTILE, context=HOSTILE, confidence=0.9, status="pending", created_at=NOW,
                        expires_at=NOW + 60)
TURN = UnsolicitedInfo(id="u-" + "1" * 14, from_team=None, to_team="alpha", status="failed", started_at=NOW,
                       text=HOSTILE, error=HOSTILE)
FANNED = [FanOutResult(to_team="alpha", status="failed", tell=TELL),
          FanOutResult(to_team="beta", status="refused", error_code="unknown_team", error=HOSTILE)]
LINES: list[dict[str, Any]] = [
    {"type": "assistant", "message": {"content": [
        {"type": "text", "text": HOSTILE},
        {"type": "tool_use", "id": "u1", "name": "Bash", "input": {"command": HOSTILE}},
    ]}},
    {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "u1", "content": HOSTILE}]}},
    {"type": "result", "subtype": "success", "result": HOSTILE},
]


class FakeClient:
    """``iris_cli.client.Client`` with no socket: a canned reply per request type, and the
    events a ``Watch`` streams before its reply."""

    replies: dict[str, msgspec.Struct] = {}
    events: list[Any] = []

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __enter__(self) -> FakeClient:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        pass

    def request(
        self, request: msgspec.Struct, on_event: Callable[[Any], None] | None = None, *, expect: object = ()
    ) -> msgspec.Struct:
        if on_event is not None:
            for event in self.events:
                on_event(event)
        return self.replies[type(request).__name__]


@pytest.fixture
def iris(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., str]]:
    import iris_cli.client

    monkeypatch.setattr(iris_cli.client, "Client", FakeClient)
    monkeypatch.setattr(render.out, "width", 200)  # nothing is cut: every mark can be seen
    monkeypatch.setattr(render.err, "width", 200)
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str, replies: dict[str, msgspec.Struct], events: Sequence[Any] = (), code: int = 0) -> str:
        FakeClient.replies, FakeClient.events = replies, list(events)
        result = CliRunner().invoke(app, list(args))
        shown = result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, shown)
        assert result.exit_code == code, (args, shown)
        assert "MarkupError" not in shown and "Traceback" not in shown, (args, shown)
        return shown

    yield run


def shows_it_all(shown: str, args: tuple[str, ...]) -> None:
    for mark in MARKS:
        assert mark in shown, (args, mark, shown)


CASES: list[tuple[tuple[str, ...], dict[str, msgspec.Struct], list[Any], int]] = [
    (("status",), {"GetStatus": StatusReply(
        pid=1, daemon_version="0", started_at=NOW, socket_path="/s", config_path="/c",
        teams=[TeamInfo(name="alpha", path="/a", description=HOSTILE, unavailable=HOSTILE)],
        processes=[ProcessInfo(from_team=None, to_team="alpha", state="failed", reason=HOSTILE)],
        max_processes=4, unsolicited=[TURN])}, [], 0),
    (("teams",), {"ListTeams": TeamsReply(teams=[TeamInfo(name="alpha", path="/a", description=HOSTILE,
                                                            unavailable=HOSTILE)])}, [], 0),
    (("tell", "alpha", HOSTILE), {"Tell": TellReply(status="failed", tell=TELL)}, [], 1),
    (("tell", "alpha,beta", HOSTILE), {"TellMany": TellsReply(results=FANNED)}, [
        FanOutEvent(result=r) for r in FANNED], 1),
    (("result", TELL.id), {"GetTell": TellReply(status="failed", tell=TELL)}, [], 1),
    (("cancel", TELL.id), {"CancelTell": TellReply(status="in_progress", tell=msgspec.structs.replace(
        TELL, status="running"))}, [], 0),
    (("report", "alpha"), {"Report": ReportReply(tells=[TELL])}, [], 0),
    (("cache", "read", TELL.id), {"ReadTranscript": TranscriptReply(tell=TELL, entries=[
        TranscriptEntry(at=NOW, type=str(line["type"]), raw=msgspec.json.encode(line).decode()) for line in LINES
    ])}, [], 0),
    (("watch",), {"Watch": CountReply(count=0)}, [
        Watching(), TellState(tell_id=TELL.id, status="queued", to_team="alpha", message=HOSTILE, error=HOSTILE),
        TellText(tell_id=TELL.id, text=HOSTILE), TellNotice(tell_id=TELL.id, text=HOSTILE),
        ApprovalEvent(approval=PENDING), UnsolicitedEvent(turn=TURN), QuestionEvent(question=QUESTION),
    ], 0),
    (("approvals", "--all"), {"ListApprovals": ApprovalsReply(approvals=[APPROVAL, PENDING])}, [], 0),
    (("approvals", "rules"), {"ListRules": RulesReply(rules=[RuleInfo(
        id="r" * 16, from_team=None, to_team="alpha", tool_name="Bash", input={"command": HOSTILE},
        created_at=NOW)])}, [], 0),
    (("questions",), {"ListQuestions": QuestionsReply(questions=[QUESTION])}, [], 0),
    (("answer", QUESTION.id, HOSTILE), {"AnswerQuestion": AnswerReply(question=QUESTION, status="failed",
                                                                     tell=TELL)}, [], 1),
    (("notifications", "--all"), {"ListNotifications": NotificationsReply(notifications=[NotificationInfo(
        id="n" * 16, from_team=None, to_team="alpha", message=HOSTILE, status="expired", created_at=NOW,
        expires_at=NOW, error=HOSTILE)])}, [], 0),
    (("ask", HOSTILE), {"Ask": AskReply(text=HOSTILE, tools=[HOSTILE])}, [], 0),
    (("wake", "alpha"), {"Wake": PairReply(process=ProcessInfo(from_team=None, to_team="alpha", state="idle"),
                                          message=HOSTILE)}, [], 0),
    (("sleep", "alpha"), {"Sleep": PairReply(process=ProcessInfo(from_team=None, to_team="alpha", state="idle"),
                                            message=HOSTILE)}, [], 0),
    (("command", "alpha", "compact"), {"Command": TellReply(status="completed", tell=msgspec.structs.replace(
        TELL, status="completed", error=""))}, [], 0),
    (("deny", APPROVAL.id, "--reason", HOSTILE), {"Decide": ApprovalReply(approval=msgspec.structs.replace(
        APPROVAL, tool_name=HOSTILE))}, [], 0),
    (("reload",), {"Reload": ReloadReply(changes=[HOSTILE])}, [], 0),
    (("costs", "--by", "chain"), {"Costs": CostsReply(by="chain", since=0.0, rows=[CostRow(key=HOSTILE)],
                                                     total=CostRow(key="total"))}, [], 0),
]


@pytest.mark.parametrize(("args", "replies", "events", "code"), CASES, ids=[" ".join(c[0][:2]) for c in CASES])
def test_markup_in_team_and_model_text_is_printed_as_written(
    iris: Callable[..., str], args: tuple[str, ...], replies: dict[str, msgspec.Struct], events: list[Any], code: int
) -> None:
    shows_it_all(iris(*args, replies=replies, events=events, code=code), args)


def test_an_error_message_with_markup_is_printed_as_written(
    iris: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import iris_cli.client
    from protocol.errors import UnknownTeamError

    class Refusing(FakeClient):
        def request(self, request: msgspec.Struct, on_event: object = None, *, expect: object = ()) -> msgspec.Struct:
            raise UnknownTeamError(f"team {HOSTILE!r} is not configured")

    monkeypatch.setattr(iris_cli.client, "Client", Refusing)
    shows_it_all(iris("report", HOSTILE, replies={}, code=1), ("report",))


def test_cancel_by_a_prefix_names_the_whole_id(iris: Callable[..., str]) -> None:
    for status in ("interrupted", "completed"):  # cancelled now, or ended before
        tell = msgspec.structs.replace(TELL, status=status, text="")
        shown = iris("cancel", "tttt", replies={"CancelTell": TellReply(status=status, tell=tell)})
        assert f"tell {TELL.id} " in shown and "tell tttt " not in shown, shown


def test_watch_is_single_spaced_and_names_a_questions_pair_from_to(iris: Callable[..., str]) -> None:
    running = TellState(tell_id=TELL.id, status="running", from_team="frontend", to_team="alpha")
    done = TellState(tell_id=TELL.id, status="completed", from_team="frontend", to_team="alpha")
    asked = msgspec.structs.replace(QUESTION, question="Deploy now?", from_team="frontend")
    shown = iris("watch", replies={"Watch": CountReply(count=0)}, events=[
        Watching(), running, TellText(tell_id=TELL.id, text="half an "), TellText(tell_id=TELL.id, text="answer"),
        TellNotice(tell_id=TELL.id, text="a notice"), done, QuestionEvent(question=asked),
    ])
    lines = shown.splitlines()
    assert "" not in lines, shown  # one event a line, no blank line between them
    assert lines[-1] == f"? {asked.id} frontend->alpha asks: Deploy now?"
    assert f"{TELL.id} frontend->alpha completed" in lines
