"""iris-agent's watcher, the decisions: pure, time as an argument.

How it works. The question desk (irisd/questions) files a pending question when a team's
answer ends by asking its caller something and nobody waited for it. With
``settings.agent.watch`` on, the watcher (irisd/agent/watcher.py) gives the asked caller
``settings.questions.answerWithin`` to answer; ``Due`` holds each pending question's
moment. When it comes and the question is still pending, ``skip_reason`` decides whether
iris-agent looks at all (never on a question of a tell it sent itself, never twice on one
question, never past its own daily budget), ``prompt_for`` says what it is shown (in its
own session for that pair, so it keeps the pair's context), and ``parse_verdict`` reads
what it answered: a question for the ``person``, one the asked ``team`` can answer (with a
suggested answer, which becomes an approval), or ``none`` (the question is dismissed,
with the reason).
"""

from __future__ import annotations

import json
import re

import msgspec

from iris_common.config import AGENT_NAME
from protocol.messages import AgentClassification, AgentVerdict, QuestionInfo

WATCH_PROMPT = """You are iris-agent, the assistant of Iris, watching one conversation between two \
Claude Code agents (teams). A team's answer ended with what looks like a question to its caller, and the \
caller has not answered it. Decide which it is: "person" (only the human who runs these teams can \
decide it: a choice of direction, a risk, money, access), "team" (the caller, which asked for the work, \
can answer it from what it asked; then suggest the answer it would give), or "none" (not really a \
question: a courtesy, a summary that needs no reply). Reply with one JSON object and nothing else: \
{"classification": "person" | "team" | "none", "confidence": a number from 0 to 1, "reason": "one \
sentence", "suggestion": "the answer to send, only for team"}. You have no tools; judge from the text."""

CLASSIFICATIONS: tuple[AgentClassification, ...] = ("person", "team", "none")
MAX_REASON = 500
MAX_SUGGESTION = 4000
MAX_SAID = 4000


def prompt_for(question: QuestionInfo) -> str:
    """What the watcher is shown about ``question``: who asked whom, the question, and the
    end of the answer last (what it judges)."""
    caller = question.from_team or "the person (external)"
    return (
        f"Pending question {question.id}: team {question.to_team} answered {caller}, and nobody has answered "
        f"it since. The question: {question.question}\n\nThe end of the answer:\n{question.context}"
    )


def parse_verdict(text: str, *, at: float, cost_usd: float | None) -> AgentVerdict | None:
    """The last JSON object in ``text`` that holds a known classification; None if none does
    (the turn is recorded, the question stays as it is)."""
    decoder = json.JSONDecoder()
    for match in reversed(list(re.finditer(r"\{", text))):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if not isinstance(value, dict) or value.get("classification") not in CLASSIFICATIONS:
            continue
        try:
            confidence = min(max(float(value.get("confidence", 0.5)), 0.0), 1.0)
        except (TypeError, ValueError):
            confidence = 0.5
        suggestion = str(value.get("suggestion") or "").strip()[:MAX_SUGGESTION]
        classification: AgentClassification = value["classification"]
        return AgentVerdict(
            classification=classification,
            confidence=confidence,
            reason=str(value.get("reason") or "").strip()[:MAX_REASON],
            suggestion=suggestion if classification == "team" else "",
            at=at,
            cost_usd=cost_usd,
            said=text[:MAX_SAID],
        )
    return None


def skip_reason(
    question: QuestionInfo | None, *, watch: bool, looked: bool, spent_usd: float, budget_usd: float | None
) -> str | None:
    """Why the watcher does not look at ``question`` now (None: it looks)."""
    if not watch:
        return "settings.agent.watch is off"
    if question is None or question.status != "pending":
        return "the question is no longer pending"
    if question.from_team == AGENT_NAME:
        return "iris-agent's own tell asked it: it never acts on events it caused"
    if looked:
        return "iris-agent looked at it already (one turn per question)"
    if budget_usd is not None and spent_usd >= budget_usd:
        return f"the watcher's daily budget (settings.agent.dailyUsd: {budget_usd:g} USD) is spent"
    return None


class Due(msgspec.Struct):
    """When each watched question is due for a look (times on the caller's clock)."""

    at: dict[str, float] = msgspec.field(default_factory=dict)

    def add(self, question_id: str, when: float) -> None:
        self.at.setdefault(question_id, when)

    def drop(self, question_id: str) -> None:
        self.at.pop(question_id, None)

    def next_deadline(self) -> float | None:
        return min(self.at.values(), default=None)

    def pop_due(self, now: float) -> list[str]:
        """The questions due at ``now``, oldest first, no longer held."""
        due = sorted((when, qid) for qid, when in self.at.items() if when <= now)
        for _, qid in due:
            del self.at[qid]
        return [qid for _, qid in due]
