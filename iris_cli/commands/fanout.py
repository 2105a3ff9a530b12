"""``iris tell alpha,beta,gamma MESSAGE``: the same message to several teams at once."""

from __future__ import annotations

import typer

from iris_cli import render
from iris_cli.commands.common import print_json, send
from iris_cli.text import ANSWERED, decide_line, tell_data
from protocol.messages import (
    Event,
    FanOutEvent,
    FanOutResult,
    TellMany,
    TellPhaseEvent,
    TellReply,
    TellsReply,
    TellState,
)


def result_data(result: FanOutResult) -> dict[str, object]:
    """One target for scripts: the tell (as 'iris tell --json' prints it), or the refusal."""
    if result.tell is not None:
        status = "in_progress" if result.status == "refused" else result.status
        return tell_data(TellReply(status=status, tell=result.tell))
    return {"to_team": result.to_team, "status": result.status, "error": {"code": result.error_code,
                                                                          "message": result.error}}


def show(result: FanOutResult) -> None:
    """One target's outcome for people, labelled with its team."""
    from rich.text import Text

    render.out.print(Text.assemble((f"── {result.to_team}", "bold"), " ", (f"({result.status})", "dim")))
    if result.tell is not None and result.tell.text:
        print(result.tell.text)
    if result.error:
        render.err.print(Text.assemble((f"{result.to_team}:", "red"), " ", result.error))
    elif result.tell is not None and result.status not in ("completed",):
        render.tell_outcome(result.status, result.tell)


class FanOutWatcher:
    """What the targets of a fan-out still wait for, while their answers come one by one:
    on a terminal one status line naming each team that waits and why; everywhere, once,
    the commands that decide an approval a target waits for (its own, or the one of the
    tell ahead of it in its pair's queue)."""

    def __init__(self, *, status_line: bool, hints: bool) -> None:
        import sys

        from iris_cli.live import StatusLine

        self.hints = hints
        self.teams: dict[str, str] = {}  # tell id -> its team
        self.waiting: dict[str, str] = {}  # team -> what it waits for, in words
        self._shown_approvals: set[str] = set()
        self._status = StatusLine(sys.stderr, sys.stdout) if status_line else None

    def __enter__(self) -> FanOutWatcher:
        if self._status is not None:
            self._status.__enter__()
            self._status.set("sending")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.__exit__(*exc)

    def line(self) -> str:
        """The status line: each team still waiting, with what it waits for."""
        return " · ".join(f"{team}: {said}" for team, said in self.waiting.items()) or "waiting"

    def on_event(self, event: Event) -> None:
        from protocol.phases import awaited_approval, describe

        match event:
            case TellState(tell_id=tell_id, to_team=team, status=status) if team:
                self.teams[tell_id] = team
                self.waiting.setdefault(team, status.replace("_", " "))
            case TellPhaseEvent(tell_id=tell_id, phase=phase) if tell_id in self.teams:
                team = self.teams[tell_id]
                self.waiting[team] = describe(phase)
                approval = awaited_approval(phase)
                if approval is not None and approval.approval_id not in self._shown_approvals:
                    self._shown_approvals.add(approval.approval_id)
                    self._note(f"{team}: {describe(phase)}\n{decide_line(approval.approval_id)}")
            case FanOutEvent(result=result):
                self.waiting.pop(result.to_team, None)
                if self._status is not None:
                    with self._status.above():
                        show(result)
                else:
                    show(result)
            case _:
                return
        if self._status is not None:
            self._status.set(self.line())

    def _note(self, text: str) -> None:
        import sys

        if self._status is not None:
            self._status.note(text)
        elif self.hints:
            print(text, file=sys.stderr, flush=True)


def tell_many(
    teams: list[str],
    message: str,
    from_team: str | None,
    timeout: int,
    as_json: bool,
    max_budget_usd: float | None = None,
    thread: str = "",
) -> None:
    """Print each answer as it comes (labelled), or a JSON list in the order given; meanwhile
    what the teams still waiting wait for (see FanOutWatcher)."""
    import sys

    request = TellMany(
        to_teams=teams, message=message, from_team=from_team, timeout_ms=timeout, stream=True,
        max_budget_usd=max_budget_usd, thread=thread,
    )
    watcher = FanOutWatcher(status_line=not as_json and sys.stderr.isatty() and sys.stdout.isatty(),
                            hints=not as_json)

    def on_event(event: Event) -> None:
        if not as_json or not isinstance(event, FanOutEvent):
            watcher.on_event(event)

    with watcher:
        reply = send(request, as_json, on_event)
    assert isinstance(reply, TellsReply)
    if as_json:
        print_json([result_data(r) for r in reply.results])
    if any(r.status not in ANSWERED for r in reply.results):
        raise typer.Exit(1)
