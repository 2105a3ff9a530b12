"""The messages of the handshake and of a tell, with the base of every message: a part of
``protocol.messages``, which re-exports all of them (import them from there, but on the
hot paths of the CLI, which import this module alone).

They live apart so that ``iris tell TEAM MESSAGE``, whose start-up is mostly Python's and
msgspec's, creates these Structs and none of the hundred others (README Performance row 7).
Defining a Struct costs about as much as importing a small module: a message joins this
module only if the plain tell sends or receives it.
"""

# No 'from __future__ import annotations' (see protocol.messages): msgspec would compile
# each string annotation when it first encodes or decodes a Struct, 56 of them in a tell.

from typing import Literal, TypeGuard

import msgspec

from protocol.limits import (
    DEFAULT_TTL_DAYS,
    BudgetUsd,
    ChainHops,
    ChainPath,
    MessageText,
    ThreadName,
    TimeoutMs,
    TtlDays,
)

# A tell's own state. Final states never change again.
TellStatus = Literal[
    "queued", "running", "awaiting_approval", "completed", "timed_out", "interrupted", "failed"
]
UNFINISHED_TELL_STATUSES: frozenset[str] = frozenset({"queued", "running", "awaiting_approval"})
FINAL_TELL_STATUSES: frozenset[str] = frozenset(
    {"completed", "timed_out", "interrupted", "failed"}
)

# What a caller sees: the final state, or "in_progress" when it stopped waiting first.
ReplyStatus = Literal["completed", "timed_out", "interrupted", "failed", "in_progress"]
# The reply statuses that answered the caller: the answer, or the tell running on past the
# caller's wait (the CLI exits 0 with these, 1 with the others).
ANSWERED_STATUSES: frozenset[str] = frozenset({"completed", "in_progress"})

# What an unfinished tell waits for right now (see ``TellPhase``).
PhaseName = Literal[
    "queued",  # behind ``ahead`` other tells of the same pair
    "waiting_for_slot",  # maxProcesses claude processes are busy (``ahead`` of them)
    "starting_claude",  # the pair's claude process is starting (or restarting)
    "waiting_for_model",  # claude sent the conversation to the model and waits
    "answering",  # the model is writing the answer
    "running_tool",  # claude runs ``tool`` (``detail``: its input, short)
    "api_retry",  # claude retries the Anthropic API (``detail``: why, when next)
    "awaiting_approval",  # a person must allow ``tool`` (``approval_id``)
    "remote",  # a remote team (A2A agent, another irisd's team) has it: ``detail`` says where and how it is
    "awaiting_input",  # a remote team waits for a person (``detail``: what it asks)
    "compacting",  # claude compacts the pair's conversation (Iris between tells, or claude itself)
]

# What a tell is: a message, a slash command, a stored notification, or a compaction Iris
# ran on the pair's conversation between tells (its cost is maintenance).
TellKind = Literal["tell", "command", "notification", "compaction"]


class _Message(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type"):
    """Base of every wire message: tagged with its snake_case class name."""


class _Event(_Message):
    """Base of every pushed event (the ``Event`` union of ``protocol.messages``): a client
    tells an event from the reply that ends its request without the union's types."""


class TellPhase(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What an unfinished tell waits for: computed by irisd where the facts are (the
    pair's queue, the process pool, claude's lines, the approval desk), so every front
    end shows the same thing. ``protocol.phases.describe`` words it for people."""

    name: PhaseName
    since: float = 0.0  # wall clock: when this phase began
    ahead: int = 0  # queued: tells before this one; waiting_for_slot: busy processes
    tool: str = ""  # running_tool, awaiting_approval
    detail: str = ""  # the tool's input in short, or the API retry's cause
    approval_id: str = ""  # awaiting_approval
    server: str = ""  # awaiting_approval of an input request: the team's MCP server that asks (``detail``: what)
    # queued: what the tell at the head of the pair's queue (the one running) waits for, so
    # that a tell stuck behind an undecided approval, a question or a long tool says so.
    head: "TellPhase | None" = None  # a string: the class is not made yet
    head_id: str = ""  # queued: that tell's id
    text: str = ""  # the phase in words (``describe``), for a front end that cannot word it (the dashboard)


class TellInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A tell as stored: its identity, state and (partial or final) answer."""

    id: str
    from_team: str | None
    to_team: str
    message: str
    status: TellStatus
    text: str = ""
    session_id: str = ""
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    error: str = ""
    cost_usd: float | None = None
    new_session: bool = False  # this tell started a new conversation (first, or recovered)
    chain_id: str = ""  # the first tell of a chain of nested tells (its own id if none)
    hops: int = 0  # how many tells led to this one
    kind: TellKind = "tell"
    approval_id: str = ""  # with status awaiting_approval: the approval it waits for
    phase: TellPhase | None = None  # while unfinished (and known to irisd): what it waits for
    # What this tell's turns cost, as cost_usd above: claude reports running totals of the
    # session, irisd books the difference each result made (irisd/claude/spend.py).
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    num_turns: int | None = None
    duration_ms: int | None = None  # claude's own figure for the turn
    max_budget_usd: float | None = None  # passed to claude as --max-budget-usd
    thread: str = ""  # the pair's conversation it went to ("": the default thread)


class Hello(_Message, tag="hello"):
    protocol_version: int
    client: str = ""


class ChainRef(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The chain of nested tells a new tell continues: the tell that sends it is hop ``hops``
    of chain ``chain_id``, and ``path`` names the teams that wait in the chain, first to
    last (the sender's team last). The new tell is hop ``hops + 1``; its team may not be one
    of ``path`` (a loop). Carried by a stored tell (a notification), by another Iris's
    message (A2A ``metadata["iris"]``, the mesh's tell), so one check (``irisd.tell.admission``)
    holds the hop limit and the loop guard for every kind of tell."""

    chain_id: str
    hops: ChainHops = 0
    path: ChainPath = []


class Tell(_Message, tag="tell"):
    """Send ``message`` to ``to_team`` in the conversation of the pair (from_team, to_team).

    ``timeout_ms``: -1 returns at once; 0 waits for the end; N waits up to N ms and
    then returns the answer so far while the tell runs on.
    """

    to_team: str
    message: MessageText
    from_team: str | None = None
    timeout_ms: TimeoutMs = 0
    stream: bool = False  # push TellText events while waiting
    # Without ``stream``: push one TellState as soon as the tell is accepted, naming it, and
    # nothing else (a client that may be cancelled mid-wait needs the id to cancel the tell).
    announce: bool = False
    persist: bool = False  # store it durably and deliver it later (a notification)
    ttl_days: TtlDays = DEFAULT_TTL_DAYS  # with persist: expire undelivered after this long
    # Nested tells: set by the MCP shim inside a claude child that Iris started (from
    # IRIS_PARENT_PAIR), naming that child's pair as "from->to" ("external->to" for no
    # team). The daemon links the new tell to the tell that pair is serving (chain, hops).
    parent_pair: str = ""
    max_budget_usd: BudgetUsd | None = None  # passed to claude (--max-budget-usd) for this tell
    # The relay chain of another Iris this tell continues (set by irisd's A2A face from the
    # message's metadata; a claude child's tells are chained by parent_pair instead).
    across: ChainRef | None = None
    # The pair's conversation: each thread has its own claude session; "" (the default) is
    # the pair's one conversation from before threads. Its form is checked by the decoder.
    thread: ThreadName = ""


class Welcome(_Message, tag="welcome"):
    protocol_version: int
    daemon_version: str
    pid: int


class ErrorReply(_Message, tag="error"):
    code: str
    message: str


class TellReply(_Message, tag="tell_reply"):
    status: ReplyStatus
    tell: TellInfo
    cancelled: bool = False  # to CancelTell: this request ended it (else it had ended before)


class TellText(_Event, tag="tell_text"):
    """New text of a running tell (a token-level delta)."""

    tell_id: str
    text: str


class TellState(_Event, tag="tell_state"):
    """A tell changed state (``Watch`` subscribers also get the pair and the message)."""

    tell_id: str
    status: TellStatus
    from_team: str | None = None
    to_team: str = ""
    message: str = ""
    error: str = ""


class TellNotice(_Event, tag="tell_notice"):
    """Something the people waiting on a running tell should know (claude retrying the API)."""

    tell_id: str
    text: str


class TellPhaseEvent(_Event, tag="tell_phase"):
    """What an unfinished tell waits for changed (see ``TellPhase``)."""

    tell_id: str
    phase: TellPhase


def is_event(message: object) -> TypeGuard[_Event]:
    """A pushed event, never the reply that ends a request: every type of the ``Event``
    union of ``protocol.messages`` derives from ``_Event`` and no other message does
    (tests/unit/test_protocol.py). ``protocol.messages.is_event`` narrows to that union."""
    return isinstance(message, _Event)
