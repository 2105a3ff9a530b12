"""One A2A task followed to its end, as the tell sees it (pure: events in, facts out).

How it works
------------
``TaskFollower`` takes what the agent sends about the task, in whatever form: a whole
``Task`` (SendMessage's answer, GetTask, a stream's first event), a status or artifact
update of a stream, or a direct ``Message`` (an answer with no task). It keeps the
task's id, context, state and answer so far, and once the task reaches a state where
the tell ends, ``ending`` says how:

=================  =========================================================
A2A state          the tell
=================  =========================================================
SUBMITTED          queued (the agent has not started)
WORKING            running, its artifacts' text as the answer so far
INPUT_REQUIRED     completed, answered with the agent's question; the task stays
                   open and the pair's next tell is the reply that continues it
COMPLETED          completed with the artifacts' text (else the status message's)
FAILED, REJECTED   failed, with the agent's reason
CANCELED           interrupted
AUTH_REQUIRED      failed: the agent wants credentials Iris was not given
=================  =========================================================

A direct ``Message`` completes the tell with its text. Why INPUT_REQUIRED ends the tell:
the caller (an agent or a person) must see the question to answer it, and in Iris an
answer to a team's question is the next tell of the same pair (pending questions,
``team_answer``), which this executor sends as the reply to the open task.
"""

from __future__ import annotations

import msgspec

from protocol import a2a
from protocol.errors import A2AAgentError
from protocol.messages import TellStatus

S = a2a.TaskState

POLL_FIRST_S = 0.25  # GetTask again this soon after a change ...
POLL_MAX_S = 2.0  # ... backing off to this while nothing changes


class Ending(msgspec.Struct, frozen=True):
    """How the tell ends: its status, its answer, the reason if it did not complete, and
    the task a reply must continue (INPUT_REQUIRED)."""

    status: TellStatus
    text: str
    error: str = ""
    open_task: str = ""


class TaskFollower:
    def __init__(self, agent: str) -> None:
        self.agent = agent  # for messages: "team 'x' (https://...)"
        self.task_id = ""
        self.context_id = ""
        self.state: a2a.TaskState | None = None
        self._artifacts: dict[str, list[a2a.Part]] = {}  # by id, in the order first seen
        self._status_text = ""
        self._direct: str | None = None  # a direct Message's text: the whole answer

    # --- what the agent sent -------------------------------------------------------------

    def task(self, task: a2a.Task) -> None:
        """A whole task: replaces what was known (its artifacts, if it carries any)."""
        self._adopt(task.id, task.context_id)
        if not isinstance(task.artifacts, msgspec.UnsetType):
            self._artifacts = {a.artifact_id: list(a.parts) for a in task.artifacts}
        self._status(task.status)

    def message(self, message: a2a.Message) -> None:
        """A direct answer with no task: the tell completes with its text."""
        if message.context_id:
            self.context_id = message.context_id
        self._direct = parts_text(message.parts)
        self.state = S.COMPLETED

    def status_update(self, event: a2a.TaskStatusUpdateEvent) -> None:
        self._adopt(event.task_id, event.context_id)
        self._status(event.status)

    def artifact_update(self, event: a2a.TaskArtifactUpdateEvent) -> None:
        self._adopt(event.task_id, event.context_id)
        parts = self._artifacts.setdefault(event.artifact.artifact_id, [])
        if not event.append:
            parts.clear()
        parts.extend(event.artifact.parts)

    def stream(self, event: a2a.StreamResponse) -> None:
        """One event of SendStreamingMessage."""
        if event.task is not None:
            self.task(event.task)
        elif event.message is not None:
            self.message(event.message)
        elif event.status_update is not None:
            self.status_update(event.status_update)
        elif event.artifact_update is not None:
            self.artifact_update(event.artifact_update)
        else:
            raise A2AAgentError(
                f"{self.agent} sent a stream event with none of task, message, statusUpdate, "
                "artifactUpdate: it does not speak A2A 1.0 streaming; ask without streaming "
                "(the card's capabilities.streaming: false) or fix the agent"
            )

    def send_result(self, result: a2a.SendMessageResponse) -> None:
        """SendMessage's answer: a task or a direct message."""
        if result.task is not None:
            self.task(result.task)
        elif result.message is not None:
            self.message(result.message)
        else:
            raise A2AAgentError(f"{self.agent} answered SendMessage with neither a task nor a message")

    # --- what the tell sees ------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """The agent works on it (or already finished): the tell runs."""
        return self.state not in (None, S.SUBMITTED, S.UNSPECIFIED)

    @property
    def text(self) -> str:
        """The answer so far: the artifacts' text (one artifact's parts joined as streamed
        chunks are; artifacts apart by a blank line), else the latest status message."""
        if self._direct is not None:
            return self._direct
        texts = [t for parts in self._artifacts.values() if (t := parts_text(parts))]
        return "\n\n".join(texts) if texts else self._status_text

    @property
    def ending(self) -> Ending | None:
        """How the tell ends, once the task is in a state that ends it; else None."""
        state = self.state
        reason = self._status_text
        match state:
            case S.COMPLETED:
                return Ending("completed", self.text)
            case S.INPUT_REQUIRED:
                question = reason or self.text or f"{self.agent} asks for more input (it said nothing more)"
                return Ending("completed", question, open_task=self.task_id)
            case S.FAILED:
                return Ending("failed", self._answer(), f"{self.agent} failed the task: {_said(reason)}")
            case S.REJECTED:
                return Ending("failed", self._answer(), f"{self.agent} rejected the task: {_said(reason)}")
            case S.CANCELED:
                return Ending("interrupted", self._answer(), f"{self.agent} cancelled the task{_colon(reason)}")
            case S.AUTH_REQUIRED:
                return Ending(
                    "failed", self._answer(),
                    f"{self.agent} wants authentication{_colon(reason)}; give it the credentials it needs "
                    "in the team's 'headers' in config.yaml (e.g. Authorization: Bearer ${TOKEN}), then 'iris reload'",
                )
        return None

    # --- inside ----------------------------------------------------------------------------

    def _adopt(self, task_id: str, context_id: str) -> None:
        if self.task_id and task_id and task_id != self.task_id:
            raise A2AAgentError(
                f"{self.agent} sent an event of task {task_id} while Iris follows task {self.task_id}: "
                "it does not follow A2A 1.0"
            )
        self.task_id = task_id or self.task_id
        self.context_id = context_id or self.context_id

    def _status(self, status: a2a.TaskStatus) -> None:
        self.state = status.state
        if status.message is not None:
            self._status_text = parts_text(status.message.parts)

    def _answer(self) -> str:
        """What the agent produced before it stopped (artifacts only: the status message
        is the reason, said in the error)."""
        texts = [t for parts in self._artifacts.values() if (t := parts_text(parts))]
        return "\n\n".join(texts)


def parts_text(parts: list[a2a.Part]) -> str:
    """Parts as text: text as it is, data as JSON, files by name or URL."""
    out: list[str] = []
    for part in parts:
        if part.text is not None:
            out.append(part.text)
        elif part.url is not None:
            out.append(f"[{part.filename or 'file'}: {part.url}]")
        elif part.raw is not None:
            out.append(f"[{part.filename or 'file'}: {len(part.raw)} bytes{_media(part)}]")
        elif not isinstance(part.data, msgspec.UnsetType):
            out.append(msgspec.json.encode(part.data).decode())
    return "".join(out)


def next_poll_delay(previous: float | None, *, changed: bool) -> float:
    """How long to wait before the next GetTask: soon after a change, backing off while
    the task stands still."""
    if changed or previous is None:
        return POLL_FIRST_S
    return min(previous * 2, POLL_MAX_S)


def _media(part: a2a.Part) -> str:
    return f", {part.media_type}" if part.media_type else ""


def _said(reason: str) -> str:
    return reason or "it gave no reason"


def _colon(reason: str) -> str:
    return f": {reason}" if reason else ""
