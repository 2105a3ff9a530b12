"""iris-agent: a claude that irisd runs to answer a person's questions about Iris.

It is not a team: it has no entry in the config, appears in no team list, and no team
can tell it (a tell names a configured team). It runs in its own folder
(``$IRIS_HOME/iris-agent``) with its own persistent session, one question at a time.
Its tools are Iris's read-only operations, served by irisd's own ``/mcp`` with a token
minted for the run (a *reader*, irisd/caller.py) and revoked when the run ends, and five
that act (tell, wake, sleep, cancel, answer): irisd files each call of those as an
approval for the person, or does it if settings.agent.allow allows it
(irisd/agent/actions.py). Without the HTTP face it has the stdio ``iris mcp --read-only``,
which only reads. Built-in tools (Bash, Edit, ...) are turned off. Nothing it does
produces an event it would be told about: it runs only when a person asks.
"""

from __future__ import annotations

import json
import logging
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import trio

from iris_common.config import AGENT_NAME, IrisConfig
from iris_common.environment import child_environment
from iris_common.locate import find_claude
from iris_common.paths import IrisPaths, session_file
from irisd.agent.watch import WATCH_PROMPT
from irisd.claude.command import stream_json_argv
from irisd.claude.launcher import read_stored_total
from irisd.claude.process import ChildExited, ChildLine, ClaudeProcess
from irisd.claude.spend import Spent, running_total, turn_share
from irisd.claude.wire import ResultLine, user_turn
from irisd.tokens import Access
from protocol.errors import ClaudeError, InvalidRequestError
from protocol.messages import AskReply

log = logging.getLogger("irisd.agent")

ASK_TIMEOUT_S = 600.0
MAX_QUESTION_CHARS = 20_000

SYSTEM_PROMPT = """You are iris-agent, the assistant of Iris. Iris is a daemon (irisd) that lets the \
Claude Code agents of a person's projects talk to each other. Each project is a *team* (a name and a \
folder). A *tell* is a message from one team (or from the person, "external") to another team, and the \
team's answer; every (asking team, answering team) pair keeps its own claude process and its own \
persistent conversation (session). Nested tells form a *chain*. Teams' claude processes may ask to use \
tools; a person decides those *approvals*. When a team's answer ends by asking its caller something and \
nobody was waiting for it, Iris records a *pending question*. Every tell's cost (USD and tokens, as \
claude reports it) is in the cost ledger, and budgets can refuse tells.

You answer the person's questions about this system from real data. Use your tools (they are Iris's \
read-only operations): team_teams and team_status for teams and processes, team_sessions for \
conversations, team_report (with allCallers true) for recent tells of a team, team_result and \
team_cache_read for one tell, team_approvals, team_questions (allCallers true) and team_costs. Call them \
rather than guessing, and say when the data does not show something. When the person asks you to act, \
you may use team_tell, team_wake, team_sleep, team_cancel and team_answer: each call is usually only a \
proposal, an approval the person decides (`iris approve ID` or `iris deny ID`); say so, with its id, and \
do not claim it happened. You never approve a team's tool use and never change config. You are not a \
team. Answer briefly, in plain language."""


def agent_mcp_config(socket: str) -> str:
    server = {
        "command": sys.executable,
        "args": ["-m", "iris_cli", "mcp", "--read-only", "--no-autostart"],
        "env": {"IRIS_SOCKET": socket},
    }
    return json.dumps({"mcpServers": {"iris": server}})


def agent_argv(
    claude_path: str, *, session_id: str, resume: bool, mcp_config: str, proposes: bool = False
) -> list[str]:
    """``mcp_config``: a file (irisd's /mcp with a reader's token) or JSON (the stdio shim).
    ``proposes``: irisd's /mcp, whose acting tools file approvals (the stdio shim only reads)."""
    from iris_mcp.tools import AGENT_PROPOSES, READ_ONLY_TOOLS  # with the agent's first claude, not irisd

    tools = READ_ONLY_TOOLS + (AGENT_PROPOSES if proposes else ())
    return [
        *stream_json_argv(claude_path, session_id=session_id, resume=resume),
        "--mcp-config",
        mcp_config,
        "--strict-mcp-config",  # only Iris: no MCP server of the user's own config
        "--tools",
        "",  # no built-in tool at all (Bash, Edit, Write, ...): it reads Iris, nothing else
        "--allowedTools",
        *[f"mcp__iris__{tool}" for tool in tools],
        "--append-system-prompt",
        SYSTEM_PROMPT,
    ]


def tool_calls(raw: bytes) -> list[str]:
    """The Iris tools an assistant line calls."""
    try:
        line = json.loads(raw)
    except ValueError:
        return []
    message = line.get("message") if isinstance(line, dict) and line.get("type") == "assistant" else None
    content = message.get("content") if isinstance(message, dict) else None
    names = [
        str(block.get("name", ""))
        for block in content if isinstance(content, list)
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ] if isinstance(content, list) else []
    return [name.removeprefix("mcp__iris__") for name in names]


def watch_argv(claude_path: str, *, session_id: str, resume: bool) -> list[str]:
    """iris-agent as the watcher: no tool at all, no MCP server; it reads what it is shown."""
    return [
        *stream_json_argv(claude_path, session_id=session_id, resume=resume),
        "--mcp-config",
        '{"mcpServers": {}}',
        "--strict-mcp-config",
        "--tools",
        "",
        "--append-system-prompt",
        WATCH_PROMPT,
    ]


class Agent:
    """Runs iris-agent for one question at a time, in its own session."""

    def __init__(self, *, config: IrisConfig, paths: IrisPaths, access: Access | None = None) -> None:
        self.config = config
        self.paths = paths
        self.access = access  # irisd's HTTP face, if it has one
        self.folder = paths.home / AGENT_NAME
        self._lock = trio.Lock()

    def reconfigure(self, config: IrisConfig) -> None:
        """A reloaded config.yaml, read by the next question."""
        self.config = config

    @property
    def _session_record(self) -> Path:
        return self.folder / "session-id"

    async def ask(self, question: str, *, new_session: bool = False) -> AskReply:
        """iris-agent's answer. Cancellation stops its claude (and its MCP server)."""
        question = question.replace("\x00", "").strip()
        if not question:
            raise InvalidRequestError("the question is empty; ask iris-agent something")
        if len(question) > MAX_QUESTION_CHARS:
            raise InvalidRequestError(f"the question is over {MAX_QUESTION_CHARS} characters; shorten it")
        async with self._lock:
            session_id, resume = await trio.to_thread.run_sync(self._session, new_session)
            grant = self.access.grant_reader() if self.access is not None else None
            try:
                mcp_config = str(grant.path) if grant is not None else agent_mcp_config(str(self.paths.socket))
                reply = await self._turn(
                    question, session_id, resume, lambda claude: agent_argv(
                        claude, session_id=session_id, resume=resume, mcp_config=mcp_config, proposes=grant is not None
                    ),
                )
            finally:
                if grant is not None:
                    grant.revoke()  # the token dies with the run
            await trio.to_thread.run_sync(self._session_record.write_text, session_id)
            log.info("iris-agent answered", extra={"tools": reply.tools, "cost_usd": reply.cost_usd})
            return reply

    async def look(self, prompt: str, session_id: str | None) -> AskReply:
        """The watcher's turn (irisd/agent/watcher.py): ``prompt`` in the pair's own session
        (``session_id``, None for a new one), with no tool at all. Cancellation stops its claude."""
        async with self._lock:
            pair_session, resume = await trio.to_thread.run_sync(self._pair_session, session_id)
            return await self._turn(
                prompt, pair_session, resume, lambda claude: watch_argv(claude, session_id=pair_session, resume=resume)
            )

    async def _turn(
        self, text: str, session_id: str, resume: bool, argv: Callable[[str], list[str]]
    ) -> AskReply:
        """One turn of iris-agent's claude (``argv`` for the claude binary), and what it cost."""
        # claude's total is the session's: the turn costs what it added to what the session had spent.
        transcript = session_file(self.paths.claude_config_dir, str(self.folder.resolve()), session_id)
        start = (await trio.to_thread.run_sync(read_stored_total, transcript) if resume else None) or Spent()
        configured = self.config.settings.claude_path
        result, tools, exit_detail = await self._run(argv(find_claude(configured) or configured), text)
        if result is None:
            raise ClaudeError(f"iris-agent ended without an answer: {exit_detail}")
        said = result.result or "; ".join(result.errors) or result.subtype
        total = running_total(result.total_cost_usd, result.model_usage)
        share = turn_share(total, start, result.model_usage, result.usage) if total is not None else None
        return AskReply(
            text=said, session_id=session_id, tools=tools, cost_usd=share.cost_usd if share is not None else None,
            is_error=result.is_error,
            input_tokens=share.input_tokens if share is not None else None,
            output_tokens=share.output_tokens if share is not None else None,
            cache_read_tokens=share.cache_read_tokens if share is not None else None,
            cache_creation_tokens=share.cache_creation_tokens if share is not None else None,
            num_turns=result.num_turns, duration_ms=result.duration_ms,
        )

    def _pair_session(self, known: str | None) -> tuple[str, bool]:
        """A watched pair's session, and whether claude has it (blocking: run in a thread)."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if known and session_file(self.paths.claude_config_dir, str(self.folder.resolve()), known).exists():
            return known, True
        return str(uuid.uuid4()), False

    def _session(self, new_session: bool) -> tuple[str, bool]:
        """The session to use, and whether claude has it (blocking: run in a thread)."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        known = "" if new_session or not self._session_record.exists() else self._session_record.read_text().strip()
        if known and session_file(self.paths.claude_config_dir, str(self.folder.resolve()), known).exists():
            return known, True
        return str(uuid.uuid4()), False

    async def _run(self, argv: list[str], question: str) -> tuple[ResultLine | None, list[str], str]:
        send, receive = trio.open_memory_channel[ChildLine | ChildExited](1000)
        env = child_environment(claude_config_dir=self.paths.claude_config_dir, daemon_env=self.config.daemon_env)
        process = ClaudeProcess(argv, cwd=str(self.folder), env=env, events=send)
        result: ResultLine | None = None
        tools: list[str] = []
        detail = f"no answer within {ASK_TIMEOUT_S:g} s"
        async with trio.open_nursery() as nursery:
            await nursery.start(process.run)
            await process.send(user_turn(question))
            with trio.move_on_after(ASK_TIMEOUT_S):
                async for event in receive:
                    if isinstance(event, ChildExited):
                        detail = event.describe()
                        break
                    tools += tool_calls(event.raw)
                    if isinstance(event.line, ResultLine):
                        result = event.line
                        break
            process.stop()
        return result, tools, detail
