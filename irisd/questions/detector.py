"""Does a team's answer end by asking its caller something? Pure: text in, a verdict out.

How it works
------------
Only the END of the answer matters: a question asked in passing and then answered, or
a rhetorical heading, is not a question for the caller. So the detector

1. drops fenced and inline code, URLs and block quotes (a ``?`` in ``a ? b : c``, a
   query string or a quoted message asks nothing),
2. keeps the last paragraph (and the one before it when the last is a list of options:
   "Which do you prefer?" followed by "1. ... 2. ..."),
3. splits it into sentences and looks at the last three,
4. tries the rules from the most to the least certain; the first that matches a
   sentence wins, unless that sentence is a pleasantry ("Anything else?", "Let me know
   if you have questions.") that expects no answer.

The rules are the seeds' patterns (a trailing ``?``, ``y/n``, "should I continue",
"may I proceed", "ready to proceed") plus the phrasings Claude habitually ends with
("Would you like me to ...", "Do you want me to ...", "Shall I ...", "Let me know
which ...", "Please confirm ...", "waiting for your go-ahead"). ``settings.questions``
adds patterns of its own (checked first) or turns the built-in ones off. The measured
precision and recall on the corpus in ``tests/unit/question_corpus.py`` are in the README.
"""

from __future__ import annotations

import functools
import re

import msgspec

MAX_QUESTION_CHARS = 600
CONTEXT_CHARS = 1500
TAIL_SENTENCES = 3


class Rule(msgspec.Struct, frozen=True):
    name: str
    pattern: re.Pattern[str]
    confidence: float
    window: int = TAIL_SENTENCES  # how many of the last sentences it looks at


class Detection(msgspec.Struct, frozen=True):
    question: str  # the asking sentence(s), as written
    confidence: float  # 0..1: how sure the rule that matched is
    pattern: str  # the rule's name (or a configured pattern)


def _rule(name: str, pattern: str, confidence: float, *, window: int = TAIL_SENTENCES) -> Rule:
    return Rule(name, re.compile(pattern, re.IGNORECASE), confidence, window)


_ASK_OPENERS = (
    r"(?:would|do|did)\s+you\s+(?:like|want|prefer)|should\s+(?:i|we)|shall\s+(?:i|we)|"
    r"can\s+(?:i|we)|may\s+(?:i|we)|could\s+you|can\s+you|would\s+it|is\s+it\s+(?:ok|okay|alright|fine)|"
    r"are\s+you\s+(?:ok|okay|fine|happy|sure)|any\s+preference|which|what|how|when|where|who|whether|do\s+you|does\s+(?:that|this)|"
    r"is\s+(?:that|this)|are\s+(?:these|those)|any\s+preference|ok(?:ay)?\s+to|want\s+me\s+to"
)

@functools.cache
def builtin_rules() -> tuple[Rule, ...]:
    """The built-in rules, compiled when the first answer is looked at (about 6 ms of
    CPU that an irisd whose tells all have a reader never spends)."""
    return (
        _rule("y/n", r"\(\s*y(?:es)?\s*/\s*n(?:o)?\s*\)|\[\s*y\s*/\s*n\s*\]|\by/n\b|\byes/no\b", 0.97),
        _rule(
            "proceed?",
            r"\b(?:should|shall|can|may)\s+(?:i|we)\s+(?:continue|proceed|go\s+ahead|start|apply|commit|push|"
            r"merge|deploy|delete|remove|run|make|do|implement|fix|update|create|move|rename|switch|use|add|"
            r"change|go|also|try|keep|leave|revert|open|write|refactor|install|upgrade)\b[^.!]*\?",
            0.95,
        ),
        _rule(
            "offer?",
            r"\b(?:would|do)\s+you\s+(?:like|want|prefer)\s+(?:me|us)\s+to\b[^.!]*\?|\bwant\s+me\s+to\b[^.!]*\?"
            r"|\bshall\s+(?:i|we)\b[^.!]*\?",
            0.95,
        ),
        _rule(
            "ready to proceed",
            r"\bready\s+to\s+(?:proceed|continue)\b|\bready\s+to\s+\w+[^.!]*\?"
            r"|\b(?:ok|okay|alright|fine)\s+to\s+(?:proceed|continue|go\s+ahead)\b",
            0.85,
        ),
        _rule(
            "confirm",
            r"\bplease\s+(?:confirm|advise|let\s+me\s+know|choose|pick|decide|approve|clarify)\b"
            r"|\b(?:waiting|wait)\s+(?:for|on)\s+your\s+"
            r"(?:confirmation|approval|go[- ]ahead|answer|reply|decision|input|ok)"
            r"|\b(?:need|needs|require|requires)\s+your\s+(?:confirmation|approval|go[- ]ahead|decision|input)\b"
            r"|\bonce\s+you\s+(?:confirm|approve|decide|choose|reply)\b|\bbefore\s+i\s+(?:proceed|continue|go\s+ahead)\b"
            r"|\bi(?:'ll|\s+will)\s+wait\s+for\s+your\b|\bawaiting\s+your\b",
            0.85,
        ),
        _rule(
            "let me know which",
            r"\blet\s+me\s+know\s+(?:which|whether|if\s+(?:you(?:'d|\s+would)?\s+like|you\s+(?:want|prefer)|i\s+should|"
            r"this|that|it's|it\s+is)|how|what|when|where|your\s+(?:preference|choice|decision))"
            r"|\b(?:tell|show)\s+me\s+(?:which|whether|how|what)\b",
            0.75,
        ),
        _rule("should I continue", r"\bshould\s+i\s+continue\b|\bmay\s+i\s+proceed\b|\bcan\s+i\s+proceed\b", 0.95),
        _rule("question?", rf"(?:^|\s)(?:{_ASK_OPENERS})\b[^?]*\?\s*$", 0.8, window=2),
        _rule("trailing ?", r"\?\s*[)\]\"'*_]*\s*$", 0.65, window=1),
    )

@functools.cache
def pleasantries() -> re.Pattern[str]:
    """Sentences that look like questions but expect no answer: sign-offs and offers of help."""
    return re.compile(
        r"^\W*(?:"
        r"(?:is\s+there\s+)?anything\s+else(?:\s+(?:i\s+can|you'?d\s+like|you\s+need|you\s+want)[^?]*)?\??"
        r"|any\s+(?:other\s+)?questions\??"
        r"|(?:let\s+me\s+know|feel\s+free\s+to\s+(?:ask|reach\s+out)|happy\s+to\s+help)[^?]*"
        r"(?:anything\s+else|any\s+(?:other\s+)?(?:questions?|changes|issues|problems|adjustments|further)|"
        r"if\s+(?:you\s+)?(?:need|have|run\s+into|hit|see|notice|spot|want)\s+(?:anything|any|more|further|other|"
        r"something|help|problems|issues|questions))[^?]*"
        r"|(?:hope\s+(?:this|that)\s+helps)[^?]*"
        r"|(?:does\s+(?:that|this)\s+help)\??"
        r")\W*$",
        re.IGNORECASE,
    )

_FENCE = re.compile(r"```.*?(?:```|$)|~~~.*?(?:~~~|$)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"\bhttps?://\S+")
_QUOTE_LINE = re.compile(r"^\s*>.*$", re.MULTILINE)
_LIST_LINE = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|[a-zA-Z][.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_]*\s+(?=[A-Z(\[\"'*_])")


class Detector:
    """The rules in force: the configured patterns first, then (unless turned off) the built-ins."""

    def __init__(self, patterns: list[str] | tuple[str, ...] = (), *, builtin: bool = True) -> None:
        self.patterns = tuple(patterns)
        self.builtin = builtin

    @functools.cached_property
    def rules(self) -> tuple[Rule, ...]:
        """Compiled on the first answer looked at (most tells end with their caller reading)."""
        custom = tuple(_rule(p, p, 0.9) for p in self.patterns)
        return custom + (builtin_rules() if self.builtin else ())

    def detect(self, text: str) -> Detection | None:
        """The question that ends ``text``, or None."""
        sentences = tail_sentences(text)
        for rule in self.rules:
            for index, sentence in enumerate(sentences):
                if index < len(sentences) - rule.window or _answered(sentences, index):
                    continue
                if rule.pattern.search(sentence) and not pleasantries().match(sentence):
                    # A bare "(y/n)" or "Thoughts?" is clearer with the sentence before it.
                    first = index - 1 if index > 0 and len(sentence) < 25 else index
                    question = " ".join(sentences[first:]).strip()
                    return Detection(question[:MAX_QUESTION_CHARS], rule.confidence, rule.name)
        return None


_SELF_ANSWER = re.compile(r"^(?:yes|no|nope|yep|because|that's because|it's because|a:|answer:|short answer)\b", re.I)


def _answered(sentences: list[str], index: int) -> bool:
    """The sentence after a question answers it ("Is it idempotent? Yes: ...")."""
    return index + 1 < len(sentences) and bool(_SELF_ANSWER.match(sentences[index + 1]))


def context_of(text: str) -> str:
    """The end of the answer, for a person deciding what to reply."""
    text = text.strip()
    return text if len(text) <= CONTEXT_CHARS else "…" + text[-CONTEXT_CHARS:]


def tail_sentences(text: str) -> list[str]:
    """The last few sentences of the answer's last paragraph, without code or URLs.
    When the answer ends with a list (options under a question), the sentences before
    the list count instead."""
    clean = _FENCE.sub("\n\n", text)
    clean = _INLINE_CODE.sub("code", clean)
    clean = _URL.sub("(link)", clean)
    clean = _QUOTE_LINE.sub("", clean)
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", clean) if p.strip()]
    if not paragraphs:
        return []
    last = paragraphs[-1]
    if _is_list(last) and len(paragraphs) > 1:
        last = paragraphs[-2] + "\n" + last
    lines = [line.strip() for line in last.splitlines() if line.strip()]
    if lines and _LIST_LINE.match(lines[-1]) and not lines[-1].endswith("?"):
        while len(lines) > 1 and _LIST_LINE.match(lines[-1]):
            lines.pop()
    pieces = [p for line in lines for p in ([line] if _LIST_LINE.match(line) else _SENTENCE_END.split(line))]
    sentences = [p.strip(" *_#") for p in pieces]
    return [s for s in sentences if s][-TAIL_SENTENCES:]


def _is_list(paragraph: str) -> bool:
    lines = [line for line in paragraph.splitlines() if line.strip()]
    return bool(lines) and all(_LIST_LINE.match(line) for line in lines)


def nobody_waiting(*, kind: str, caller_got_end: bool, caller_left: bool, result_waiters: int) -> bool:
    """Whether no one will read a finished tell's answer: a persisted tell (delivered by
    irisd), a caller that was answered before the end (``--timeout -1`` or N, an MCP call
    past its time) or that left, and no ``iris result --wait`` waiting for it now."""
    if result_waiters > 0:
        return False
    return kind == "notification" or not caller_got_end or caller_left
