"""A tell's answer as claude streams it: text deltas, finished assistant messages and a
slash command's output, from claude's lines. Pure: the tell machine keeps one per tell,
and a restart rebuilds the answer of a tell cut short from its stored lines."""

from __future__ import annotations

from collections.abc import Iterable

from irisd.claude.wire import AnyLine, AssistantLine, StreamEventLine, UserLine, decode_line


class AnswerText:
    def __init__(self) -> None:
        self._committed: list[str] = []  # text of finished assistant messages
        self._streaming = ""  # text of the content block being streamed

    def feed(self, line: AnyLine) -> None:
        match line:
            case StreamEventLine():
                if line.event.type in ("content_block_start", "message_start"):
                    self._streaming = ""
                self._streaming += line.text_delta()
            case AssistantLine():
                self._streaming = ""
                if text := line.text():
                    self._committed.append(text)
            case UserLine():  # a slash command's output ("Compacted"): its answer
                if output := line.command_output():
                    self._committed.append(output)

    @property
    def text(self) -> str:
        parts = [*self._committed, self._streaming] if self._streaming else self._committed
        return "\n".join(parts)


def answer_so_far(raw_lines: Iterable[bytes]) -> str:
    """The answer held by a tell's stored lines (what it had said when it was cut short)."""
    answer = AnswerText()
    for raw in raw_lines:
        answer.feed(decode_line(raw))
    return answer.text
