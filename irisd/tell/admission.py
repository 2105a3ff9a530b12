"""Whether a tell may be queued: a pure decision on frozen facts. No trio, no I/O.

How it works
------------
The tell service (``service.py``) gathers the facts: what the team's folder and claude
say (``Facts.unavailable``, ``Facts.launch_problem``), the pairs' frozen snapshots
(where the caller's own tell sits in its chain), what the ledger says was spent, and
the pairs' rate window. ``admit`` answers ``Admit(chain_id, hops, path)`` or
``Refuse(error, message)``, checking in this order: the team can answer, the request's
ranges (message, wait, max budget), the chain (hop limit, loop), the budgets, the rate.
A refused nested tell is recorded as failed (``Refuse.recorded``: the reason stored),
so the chain's history shows where it stopped. Time is an argument.

A chain is a ``ChainRef`` (id, the sender's hop, the teams waiting in it, first to last),
whoever carries it: the running tell whose claude sends the new one (its pair's
snapshot), a stored tell being delivered (a notification keeps the chain it was sent
in), another Iris's message (A2A, the mesh). ``chain_problem`` is the one check of the
hop limit and the loop guard for all of them. A stored tell's sender does not wait for
it, so the chain it carries names the sender only (``stored_chain``): two teams that
store tells for each other go on until the hop limit, not for ever.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import msgspec

from iris_common.config import Settings
from irisd.budget import Budgets, RateWindow, Spending, chain_reached, exceed_question, more_usd, refusal
from protocol.errors import (
    BudgetError,
    ClaudeError,
    InvalidRequestError,
    IrisError,
    LoopError,
    RateLimitedError,
    TeamUnavailableError,
)
from protocol.limits import MAX_MESSAGE_CHARS, MAX_TELL_BUDGET_USD, MAX_WAIT_MS, MIN_WAIT_MS, range_problem
from protocol.messages import ChainRef, Tell
from protocol.pairs import PairKey as PairKey
from protocol.pairs import parse_pair_label


class ChainLink(Protocol):
    """A running tell as its pair's snapshot shows it (``irisd.pool.pair.TellLink``)."""

    @property
    def id(self) -> str: ...
    @property
    def from_team(self) -> str | None: ...
    @property
    def to_team(self) -> str: ...
    @property
    def chain_id(self) -> str: ...
    @property
    def hops(self) -> int: ...
    @property
    def path(self) -> tuple[str, ...]: ...


class PairFacts(Protocol):
    """A pair's frozen snapshot, as far as admission reads it (``PairSnapshot``)."""

    @property
    def key(self) -> PairKey: ...
    @property
    def current(self) -> ChainLink | None: ...


class Candidate(msgspec.Struct, frozen=True):
    """What the caller asks: a tell of ``from_team`` (None: external) to ``to_team``."""

    from_team: str | None
    to_team: str
    message: str
    timeout_ms: int
    max_budget_usd: float | None = None
    parent_pair: str = ""  # "from->to" of the tell whose claude sends this one (nested)
    across: ChainRef | None = None  # the chain this tell continues if no parent: another Iris's, a stored tell's
    kind: Literal["tell", "command", "notification"] = "tell"  # recorded so when refused


class Facts(msgspec.Struct, frozen=True):
    """What the service read for ``admit``; ``rate`` is only read, never recorded into."""

    settings: Settings
    pairs: Sequence[PairFacts]
    spending: Spending
    rate: RateWindow
    now: float
    team_daily_usd: float | None = None
    unavailable: str = ""  # iris_common.config.team_unavailable
    launch_problem: str = ""  # why claude would refuse to start (root_skip_problem)
    chain_extra_usd: float = 0.0  # what the person let this chain spend beyond chainUsd (askToExceed)


class Admit(msgspec.Struct, frozen=True):
    chain_id: str  # "" starts a chain (the tell's own id becomes its chain id)
    hops: int
    path: tuple[str, ...] = ()  # the teams waiting in the chain, this tell's own team last


class Refuse(msgspec.Struct, frozen=True):
    error: type[IrisError]
    message: str  # what the caller is told
    recorded: str = ""  # a refused nested tell is stored as failed with this reason
    # the chain's budget refuses and settings.budget.askToExceed is on: the person may let
    # it go on for this much more, asked ``question`` first
    exceed_usd: float | None = None
    question: str = ""

    def exception(self) -> IrisError:
        return self.error(self.message)


Decision = Admit | Refuse


def admit(candidate: Candidate, facts: Facts) -> Decision:
    """Admit the tell (where it sits in its chain) or refuse it, with the reason."""
    c = candidate
    if facts.unavailable:
        return Refuse(TeamUnavailableError, facts.unavailable)
    if facts.launch_problem:
        return Refuse(ClaudeError, facts.launch_problem)  # claude would not start
    for problem in (message_problem(c.message), wait_problem(c.timeout_ms), max_budget_problem(c.max_budget_usd)):
        if problem:
            return Refuse(InvalidRequestError, problem)
    chain = continued(parent_tell(c.parent_pair, facts.pairs), c.across)
    if chain is not None and (problem := chain_problem(chain, c.to_team, facts.settings.hop_limit)):
        return chain_refusal(problem, c.to_team)
    chain_id, hops = (chain.chain_id, chain.hops + 1) if chain is not None else ("", 0)
    limits = budgets(facts.settings, facts.team_daily_usd, chain_id, facts.chain_extra_usd)
    if spent := refusal(c.to_team, facts.spending, limits):
        asking = facts.settings.budget.ask_to_exceed if chain_reached(facts.spending, limits) else False
        more = more_usd(asking, facts.settings.budget.chain_usd)
        question = exceed_question(c.to_team, facts.spending, limits, more) if more is not None else ""
        return Refuse(BudgetError, f"not sent: {spent}", exceed_usd=more, question=question)
    wait_s = facts.rate.wait_s((c.from_team, c.to_team), facts.now)
    if wait_s is not None:
        return Refuse(
            RateLimitedError,
            f"{c.from_team or 'external'}->{c.to_team} sent {facts.rate.per_minute} tells in the last minute "
            f"(settings.rateLimit); send this one in {wait_s:.0f} s, or raise settings.rateLimit in "
            "config.yaml and run 'iris reload'",
        )
    return Admit(chain_id, hops, path_of(chain, c.from_team, c.to_team))


def budgets(settings: Settings, team_daily_usd: float | None, chain_id: str, chain_extra_usd: float = 0.0) -> Budgets:
    """The budgets a tell is checked against (a chain's only for a nested tell, grown by
    what the person allowed it beyond: ``chain_extra_usd``)."""
    chain_usd = settings.budget.chain_usd
    return Budgets(
        daily_usd=settings.budget.daily_usd,
        team_daily_usd=team_daily_usd,
        chain_usd=chain_usd + chain_extra_usd if chain_id and chain_usd is not None else None,
    )


# --- chains of nested tells ------------------------------------------------------------


def continued(parent: ChainLink | None, across: ChainRef | None) -> ChainRef | None:
    """The chain a new tell continues: that of the running tell whose claude sends it, else
    the one it came with (another Iris's, a stored tell's); None: it starts a chain."""
    if parent is not None:
        return ChainRef(chain_id=parent.chain_id, hops=parent.hops, path=list(parent.path))
    return across


def chain_of(parent: ChainLink | None, across: ChainRef | None) -> tuple[str, int]:
    """A new tell's chain and hop: one further than the chain it continues; a chain of its
    own ("", 0) otherwise."""
    chain = continued(parent, across)
    return (chain.chain_id, chain.hops + 1) if chain is not None else ("", 0)


def path_of(chain: ChainRef | None, from_team: str | None, to_team: str) -> tuple[str, ...]:
    """The teams waiting in a new tell's chain, its own team last: the chain's, or (a chain
    of its own) its sender's."""
    if chain is None:
        return (from_team or "external", to_team)
    return (*chain.path, to_team)


def chain_problem(chain: ChainRef, to_team: str, hop_limit: int) -> str:
    """Why a tell that continues ``chain`` must not go to ``to_team``: a chain too long, or
    a loop back to a team that waits in it; "" if it may. The one check of both, for every
    kind of tell and every door (a nested tell, a stored one, A2A, the mesh)."""
    hops = chain.hops + 1
    if hops > hop_limit:
        return f"this tell would be hop {hops} of a chain of nested tells; the limit is {hop_limit}"
    if to_team in chain.path:
        return f"loop: {to_team} is already waiting in this chain ({' -> '.join([*chain.path, to_team])})"
    return ""


def chain_refusal(problem: str, to_team: str) -> Refuse:
    """A chain's refusal (``chain_problem``): a LoopError, recorded in the chain's history."""
    return Refuse(LoopError, f"{problem}; answer from what you know instead of asking {to_team}", problem)


def stored_chain(chain: ChainRef | None, from_team: str | None) -> ChainRef | None:
    """The chain a stored tell (a notification) keeps until it is delivered: the hop of the
    tell that sent it, and only its sender as waiting (it does not wait for the answer, and
    the teams before it will have moved on); None if it was sent outside any chain."""
    if chain is None:
        return None
    sender = chain.path[-1:] if chain.path else [from_team or "external"]
    return ChainRef(chain_id=chain.chain_id, hops=chain.hops, path=sender)


def self_tell_problem(from_team: str | None, to_team: str) -> str:
    """Why a stored tell (persist) cannot go to its own sender; "" if it may."""
    if from_team != to_team:
        return ""
    return (
        f"{to_team} cannot store a tell for itself (persist): it would be delivered to {to_team} "
        "as a new tell, which may store another; keep the note in a file, or tell another team"
    )


def parent_tell(parent_pair: str, pairs: Sequence[PairFacts]) -> ChainLink | None:
    """The running tell of pair ``parent_pair`` ("from->to", "from->to#thread"), whose claude sends a
    nested tell; None if there is none (not nested, or that tell already ended: nothing
    waits on this one)."""
    if not parent_pair:
        return None
    key = parse_pair_label(parent_pair)
    return next((p.current for p in pairs if p.key == key), None)


# --- a request's ranges ------------------------------------------------------------------


def message_problem(message: str) -> str:
    """Why ``message`` cannot be passed on as it is; "" if it can. NUL characters are
    refused, not dropped: the team would read a text other than the one sent (and
    claude's input and SQLite text do not carry them reliably)."""
    if (nul := message.find("\x00")) >= 0:
        return (
            f"the message holds a NUL character (at position {nul}); it cannot be passed on "
            "as it is: remove it (e.g. tr -d '\\000'), or send binary data as a file"
        )
    if not message.strip():
        return "the message is empty; say what the team should do"
    if len(message) > MAX_MESSAGE_CHARS:
        return (
            f"the message has {len(message)} characters, over the {MAX_MESSAGE_CHARS} limit; "
            "point the team at a file instead"
        )
    return ""


def wait_problem(timeout_ms: int) -> str:
    """Why a caller's wait (-1, 0 or N ms) is out of range; "" if it is not."""
    if timeout_ms in (-1, 0) or MIN_WAIT_MS <= timeout_ms <= MAX_WAIT_MS:
        return ""
    return (
        f"timeout {timeout_ms} ms is out of range; {seconds_hint(timeout_ms)}use -1 (return at once), "
        f"0 (wait for the answer) or {MIN_WAIT_MS} to {MAX_WAIT_MS} ms"
    )


def result_wait_problem(wait_ms: int) -> str:
    """Why a wait for a tell's result is out of range (no -1 here: 0 already answers at once)."""
    if not wait_ms or MIN_WAIT_MS <= wait_ms <= MAX_WAIT_MS:
        return ""
    return (
        f"wait {wait_ms} ms is out of range; {seconds_hint(wait_ms)}use 0 (answer at once) or "
        f"{MIN_WAIT_MS} to {MAX_WAIT_MS} ms"
    )


def max_budget_problem(max_budget_usd: float | None) -> str:
    """A tell's own budget (passed to its claude as --max-budget-usd) that is not one."""
    if max_budget_usd is None or 0 < max_budget_usd <= MAX_TELL_BUDGET_USD:
        return ""
    return (
        f"max budget {max_budget_usd!r} USD is not a budget; give a positive number of "
        f"dollars up to {MAX_TELL_BUDGET_USD:g} (e.g. 0.5), or leave it out"
    )


def persist_problem(request: Tell) -> str:
    """Why a persisted tell (a notification) cannot be stored as asked; "" if it can."""
    if problem := message_problem(request.message):
        return problem
    if request.max_budget_usd is not None:
        return (
            "a stored tell (persist) cannot carry a max budget yet; send it without persist to give it "
            "one, or rely on settings.budget and the team's budget.dailyUsd"
        )
    if out_of_range := range_problem(Tell, "ttl_days", request.ttl_days):
        return f"a time to live of {request.ttl_days:g} days (ttl_days) is {out_of_range}"
    if request.thread:
        return (
            f"a stored tell (persist) cannot go to a thread yet (thread {request.thread!r}); send it without "
            "persist to continue that thread, or without the thread for the pair's default conversation"
        )
    return ""


def seconds_hint(ms: int) -> str:
    """Seconds typed where milliseconds are wanted (``5`` for 5 s) get a "did you mean"."""
    return f"did you mean {ms * 1000} ({ms} s)? " if 0 < ms < MIN_WAIT_MS and ms * 1000 <= MAX_WAIT_MS else ""


def check_message(message: str) -> str:
    """The message as given, or InvalidRequestError (``message_problem``)."""
    if problem := message_problem(message):
        raise InvalidRequestError(problem)
    return message


def check_wait(timeout_ms: int) -> None:
    """InvalidRequestError for a caller's wait out of range (``wait_problem``)."""
    if problem := wait_problem(timeout_ms):
        raise InvalidRequestError(problem)
