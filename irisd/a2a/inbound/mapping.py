"""What Iris things are in A2A, and back: pure functions, no I/O.

* A **task** is a tell (task id = tell id, so ``iris result ID`` finds it). When a task
  asked for input and the client answered, the answer is the next tell of the same pair
  (``AnswerQuestion``); the task then goes on as that tell: ``TaskView.tells`` is the chain.
* A **context** is a conversation of the caller's pair, a thread (``context_of``): the
  default one is ``a2a:NAME->team`` (or ``external->team`` for the owner), which a message
  without a contextId continues, as before threads. A contextId of the client's own (a
  thread name: letters, digits, '.', '_', '-', e.g. a UUID) opens a thread of its own with
  its own claude session, and continues it when sent again (``thread_of``). So a client
  that opens two contexts has two conversations, and another Iris gives each of its pairs
  a context of its own.
* **States** (``task_state``): queued -> SUBMITTED, running -> WORKING, awaiting approval or
  an answer that asks the caller something -> INPUT_REQUIRED, completed -> COMPLETED (the
  answer as an artifact and as the status message), failed or timed out -> FAILED, refused
  (a loop, the hop limit; budgets and the rate limit refuse before any tell exists, see
  ``rejected_task``) -> REJECTED, interrupted (cancelled) -> CANCELED.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import mimetypes
import re
from typing import Any

import msgspec

from protocol import a2a
from protocol.errors import IrisError
from protocol.limits import THREAD_RULE, thread_problem
from protocol.messages import QuestionInfo, TeamInfo, TellInfo

# Media types a message part may carry: claude reads text, so text and JSON are passed
# on; anything else (images, archives) is refused with ContentTypeNotSupportedError.
INPUT_MODES = ["text/plain", "application/json"]
OUTPUT_MODES = ["text/plain"]
BEARER_SCHEME = "bearer"


class A2AError(Exception):
    """An error for the A2A client: a JSON-RPC/A2A code, a message it can act on, and
    ErrorInfo metadata."""

    def __init__(self, code: int, message: str, *, status: int = 200, **metadata: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status  # the HTTP status it is answered with (403: refused by the core's policy)
        self.metadata = metadata

    @classmethod
    def of(cls, exc: IrisError) -> A2AError:
        """An Iris error in A2A's words: its class's JSON-RPC code (protocol/errors.py); a
        refusal of who may do what is answered 401/403, as on every other face."""
        status = exc.http_status if exc.http_status in (401, 403) else 200
        return cls(exc.jsonrpc_code, exc.message, status=status, irisCode=exc.code)

    def to_wire(self) -> a2a.JsonRpcError:
        return a2a.error(self.code, self.message, **self.metadata)


def iso(ts: float | None) -> str:
    """An epoch time as A2A writes it: ISO 8601, UTC, milliseconds."""
    if ts is None:
        return ""
    moment = datetime.datetime.fromtimestamp(ts, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso(text: str) -> float:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise A2AError(a2a.INVALID_PARAMS, f"{text!r} is not an ISO 8601 time (e.g. 2026-03-12T10:00:00Z)") from None


def context_of(from_team: str | None, to_team: str, thread: str = "") -> str:
    """The contextId of a conversation of the pair: the thread's name, or for the pair's
    default thread ``from->to`` (which no thread name can be)."""
    return thread or f"{from_team or 'external'}->{to_team}"


def thread_of(context_id: str, from_team: str | None, to_team: str) -> str:
    """The thread a message's contextId names: "" for none or the pair's default context,
    else the contextId itself, if it can be a thread name (InvalidParams if it cannot)."""
    if not context_id or context_id == context_of(from_team, to_team):
        return ""
    if thread_problem(context_id):
        raise A2AError(
            a2a.INVALID_PARAMS,
            f"contextId {context_id!r} cannot name a conversation here: a contextId of your own is a thread "
            f"name ({THREAD_RULE}); send one such as a UUID to open a conversation of its own, "
            f"{context_of(from_team, to_team)!r} (or none) for your default one with {to_team}",
            contextId=context_id,
        )
    return context_id


def on_agent(info: TellInfo, team: str) -> bool:
    """Whether a tell is a task of ``team``'s agent (whose tells a caller may read at all is
    the core's decision: irisd/policy.py)."""
    return info.to_team == team


# --- messages in ---------------------------------------------------------------------------


def check_version(header: str | None) -> None:
    """VersionNotSupportedError unless the client speaks 1.0 (a patch number is ignored,
    a missing minor is 0: "1" is 1.0; no header means 0.3, spec 3.6.2)."""
    version = (header or "").strip() or a2a.DEFAULT_VERSION
    major, _, minor = version.partition(".")
    if f"{major}.{minor.split('.')[0] or '0'}" != a2a.PROTOCOL_VERSION:
        raise A2AError(
            a2a.VERSION_NOT_SUPPORTED,
            f"A2A version {version} is not supported; this agent speaks {a2a.PROTOCOL_VERSION}: "
            f"send the header '{a2a.VERSION_HEADER}: {a2a.PROTOCOL_VERSION}'",
            supportedVersions=a2a.PROTOCOL_VERSION,
        )


def message_text(message: a2a.Message) -> str:
    """The tell's text: the text parts as they are, JSON data as a JSON block, a file by
    reference as its URL, a text file's bytes as text. Anything claude cannot read is
    refused (ContentTypeNotSupportedError), never dropped."""
    if message.role != a2a.Role.USER:
        raise A2AError(a2a.INVALID_PARAMS, f"message.role must be {a2a.Role.USER.value}, not {message.role.value}")
    if not message.parts:
        raise A2AError(a2a.INVALID_PARAMS, 'message.parts is empty; send at least one part (e.g. {"text": "..."})')
    pieces = [_part_text(part, i) for i, part in enumerate(message.parts)]
    return "\n\n".join(piece for piece in pieces if piece)


def _readable(media_type: str) -> bool:
    kind = media_type.split(";")[0].strip().lower()
    return not kind or kind.startswith("text/") or kind == "application/json" or kind.endswith("+json")


def _part_text(part: a2a.Part, index: int) -> str:
    if not _readable(part.media_type):
        raise A2AError(
            a2a.CONTENT_TYPE_NOT_SUPPORTED,
            f"part {index} is {part.media_type}; this agent reads {', '.join(INPUT_MODES)} (and text/*)",
            mediaType=part.media_type,
        )
    name = f" {part.filename}" if part.filename else ""
    if part.text is not None:
        return part.text
    if part.data is not msgspec.UNSET:
        return f"```json{name}\n{json.dumps(part.data, indent=1, ensure_ascii=False)}\n```"
    if part.url is not None:
        return f"(file{name} at {part.url})"
    if part.raw is not None:
        try:
            return f"```{name.strip()}\n{part.raw.decode()}\n```"
        except UnicodeDecodeError:
            raise A2AError(
                a2a.CONTENT_TYPE_NOT_SUPPORTED, f"part {index} holds bytes that are not UTF-8 text", mediaType="binary"
            ) from None
    raise A2AError(a2a.INVALID_PARAMS, f"part {index} has no content; set one of text, data, url or raw")


def incoming_chain(*metadata: dict[str, Any] | None) -> a2a.IrisChain | None:
    """The relay chain another Iris sent along (``metadata["iris"]`` of the message, else of
    the request), or None."""
    for found in metadata:
        raw = (found or {}).get(a2a.IRIS_METADATA_KEY)
        if raw is None:
            continue
        try:
            return msgspec.convert(raw, a2a.IrisChain)
        except msgspec.ValidationError as exc:
            raise A2AError(a2a.INVALID_PARAMS, f"metadata.iris is not an Iris chain: {exc}") from None
    return None


def decision(text: str) -> tuple[bool, str] | None:
    """An answer to an approval: (allow, reason) from "allow"/"yes" or "deny"/"no" (the
    rest is the reason); None if it is neither."""
    word, _, rest = text.strip().partition(" ")
    word = word.strip(".,!:").lower()
    if word in ("allow", "allowed", "yes", "approve", "approved"):
        return True, rest.strip()
    if word in ("deny", "denied", "no", "reject"):
        return False, rest.strip()
    return None


# --- tasks out --------------------------------------------------------------------------------


class TaskView(msgspec.Struct):
    """A task as Iris knows it: its tells, first to latest (an answered question leads to
    the next), and the question the latest one left, if any."""

    tells: list[TellInfo]
    question: QuestionInfo | None = None  # of the latest tell
    asks: bool = False  # the latest tell's answer asks its caller something
    context_id: str = ""

    @property
    def id(self) -> str:
        return self.tells[0].id

    @property
    def latest(self) -> TellInfo:
        return self.tells[-1]

    @property
    def state(self) -> a2a.TaskState:
        return task_state(self.latest, self.question, self.asks)


def refused(info: TellInfo) -> bool:
    """A tell Iris refused before it ran (a loop, the hop limit)."""
    return (
        info.status == "failed"
        and info.started_at is None
        and (info.error.startswith("loop:") or "chain of nested tells" in info.error)
    )


def task_state(info: TellInfo, question: QuestionInfo | None, asks: bool) -> a2a.TaskState:
    match info.status:
        case "queued":
            return a2a.TaskState.SUBMITTED
        case "running":
            return a2a.TaskState.WORKING
        case "awaiting_approval":
            return a2a.TaskState.INPUT_REQUIRED
        case "completed":
            if question is not None:
                if question.status == "pending":
                    return a2a.TaskState.INPUT_REQUIRED
                if question.status == "dismissed":
                    return a2a.TaskState.CANCELED
                return a2a.TaskState.COMPLETED
            return a2a.TaskState.INPUT_REQUIRED if asks else a2a.TaskState.COMPLETED
        case "interrupted":
            return a2a.TaskState.CANCELED
        case "failed" if refused(info):
            return a2a.TaskState.REJECTED
        case _:  # failed, timed_out
            return a2a.TaskState.FAILED


def _agent_message(view: TaskView, text: str, suffix: str) -> a2a.Message:
    return a2a.Message(
        message_id=f"{view.latest.id}-{suffix}",
        role=a2a.Role.AGENT,
        parts=[a2a.Part(text=text)],
        context_id=view.context_id,
        task_id=view.id,
    )


def status_message(view: TaskView) -> a2a.Message | None:
    """What the agent says with the current state: the answer, the question, the approval
    it waits for, or why it failed."""
    info = view.latest
    state = view.state
    if info.status == "awaiting_approval":
        tool = info.phase.tool if info.phase is not None and info.phase.tool else "a tool"
        detail = f" ({info.phase.detail})" if info.phase is not None and info.phase.detail else ""
        return _agent_message(
            view,
            f"The team asks to use {tool}{detail}; approval {info.approval_id} waits for the owner of this Iris. "
            "The owner answers 'allow' or 'deny REASON' to this task, or runs "
            f"'iris approve {info.approval_id}'.",
            "approval",
        )
    if state in (a2a.TaskState.COMPLETED, a2a.TaskState.INPUT_REQUIRED):
        return _agent_message(view, info.text, "answer")
    if state in (a2a.TaskState.FAILED, a2a.TaskState.REJECTED, a2a.TaskState.CANCELED) and info.error:
        return _agent_message(view, info.error, "error")
    return None


def answer_artifact(view: TaskView, text: str | None = None) -> a2a.Artifact:
    """The answer as the task's artifact: the whole answer's parts (``answer_parts``), or
    one text part of ``text`` (a streamed chunk)."""
    parts = answer_parts(view.latest.text) if text is None else [a2a.Part(text=text)]
    return a2a.Artifact(artifact_id=f"{view.latest.id}-answer", name="answer", parts=parts)


# An answer that is only a fenced block (its info string: a language and/or a file name),
# or only a file reference: the forms ``message_text`` writes a message's parts in.
_FENCE = re.compile(r"\A```([^`\n]*)\n((?:(?!\n```).)*)\n```\Z", re.S)
_FILE_AT = re.compile(r"\A\(file (\S+) at (\S+)\)\Z")


def answer_parts(text: str) -> list[a2a.Part]:
    """An answer as A2A parts: the inverse of ``message_text``. An answer that is only a
    ```json block is that data; only a block whose info string names a file
    (```output.txt) is that file; only "(file NAME at URL)" is a file by reference; any
    other answer is its text."""
    whole = text.strip()
    if found := _FILE_AT.match(whole):
        name, url = found.groups()
        return [a2a.Part(url=url, filename=name, media_type=_media_type(name))]
    if found := _FENCE.match(whole):
        info, body = found.group(1).split(), found.group(2)
        name = next((word for word in info if "." in word), "")
        if info[:1] == ["json"]:
            try:
                data = json.loads(body)
            except ValueError:
                data = msgspec.UNSET
            if data is not msgspec.UNSET:
                return [a2a.Part(data=data, filename=name, media_type="application/json")]
        if name:
            return [a2a.Part(raw=body.encode(), filename=name, media_type=_media_type(name))]
    return [a2a.Part(text=text)]


def _media_type(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def history(view: TaskView) -> list[a2a.Message]:
    """The messages of the task in order: each tell's message, then its answer."""
    found: list[a2a.Message] = []
    for info in view.tells:
        found.append(
            a2a.Message(
                message_id=f"{info.id}-message",
                role=a2a.Role.USER,
                parts=[a2a.Part(text=info.message)],
                context_id=view.context_id,
                task_id=view.id,
            )
        )
        if info.text and info.status != "awaiting_approval":
            found.append(
                a2a.Message(
                    message_id=f"{info.id}-answer",
                    role=a2a.Role.AGENT,
                    parts=[a2a.Part(text=info.text)],
                    context_id=view.context_id,
                    task_id=view.id,
                )
            )
    return found


def status_time(view: TaskView) -> float:
    info = view.latest
    return info.finished_at or info.started_at or info.created_at


def to_task(view: TaskView, *, history_length: int | None = None, include_artifacts: bool = True) -> a2a.Task:
    state = view.state
    task = a2a.Task(
        id=view.id,
        context_id=view.context_id,
        status=a2a.TaskStatus(state=state, message=status_message(view), timestamp=iso(status_time(view))),
        metadata={"iris": {"tellId": view.latest.id, "fromTeam": view.latest.from_team or "external"}},
    )
    if include_artifacts:
        task.artifacts = [answer_artifact(view)] if state == a2a.TaskState.COMPLETED else []
    if history_length != 0:
        messages = history(view)
        task.history = messages[-history_length:] if history_length else messages
    return task


def rejected_task(task_id: str, context_id: str, why: str, now: float) -> a2a.Task:
    """A message Iris refused before any tell existed (a budget, the rate limit, a loop):
    the task is REJECTED at once and kept nowhere."""
    return a2a.Task(
        id=task_id,
        context_id=context_id,
        status=a2a.TaskStatus(
            state=a2a.TaskState.REJECTED,
            message=a2a.Message(
                message_id=f"{task_id}-error",
                role=a2a.Role.AGENT,
                parts=[a2a.Part(text=why)],
                context_id=context_id,
                task_id=task_id,
            ),
            timestamp=iso(now),
        ),
    )


# --- paging -------------------------------------------------------------------------------------


def page_token(view: TaskView) -> str:
    cursor = f"{status_time(view)!r}|{view.id}"
    return base64.urlsafe_b64encode(cursor.encode()).decode()


def after_token(views: list[TaskView], token: str) -> list[TaskView]:
    """The views after the cursor ``token`` (they are sorted newest first)."""
    if not token:
        return views
    try:
        at, _, task_id = base64.urlsafe_b64decode(token.encode()).decode().partition("|")
        cursor = (float(at), task_id)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise A2AError(a2a.INVALID_PARAMS, "pageToken is not one this agent gave; start again without it") from None
    return [v for v in views if (status_time(v), v.id) < cursor]


def sort_key(view: TaskView) -> tuple[float, str]:
    return (status_time(view), view.id)


# --- the card -------------------------------------------------------------------------------------


def card(team: TeamInfo, url: str, version: str) -> a2a.AgentCard:
    """``team`` as an A2A agent: JSON-RPC at ``url``, streaming, a bearer token."""
    about = team.description or f"The Claude Code agent of the {team.name} project, through Iris"
    return a2a.AgentCard(
        name=team.name,
        description=about,
        supported_interfaces=[
            a2a.AgentInterface(url=url, protocol_binding=a2a.JSONRPC_BINDING, protocol_version=a2a.PROTOCOL_VERSION)
        ],
        version=version,
        capabilities=a2a.AgentCapabilities(streaming=True, push_notifications=False, extended_agent_card=False),
        security_schemes={
            BEARER_SCHEME: a2a.SecurityScheme(
                http_auth_security_scheme=a2a.HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    description="'iris a2a token --name NAME' issues one per agent; the owner's token works too",
                )
            )
        },
        security_requirements=[a2a.SecurityRequirement(schemes={BEARER_SCHEME: a2a.StringList()})],
        default_input_modes=INPUT_MODES,
        default_output_modes=OUTPUT_MODES,
        skills=[
            a2a.AgentSkill(
                id=team.name,
                name=team.name,
                description=about,
                tags=["claude-code", team.name],
            )
        ],
    )
