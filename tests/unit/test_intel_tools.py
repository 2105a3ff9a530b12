"""iris-agent's read-only tool set, fan-out and question tools in the shim, with a scripted link."""

from __future__ import annotations

import json

from fakes.links import ScriptedLink
from iris_mcp.render import render_reply
from iris_mcp.shim import Shim, mcp_tool_list
from iris_mcp.tools import READ_ONLY_TOOLS, TOOLS_BY_NAME
from irisd.agent.runner import agent_argv, agent_mcp_config, tool_calls
from protocol.messages import (
    AnswerQuestion,
    AnswerReply,
    CostRow,
    CostsReply,
    FanOutResult,
    ListQuestions,
    QuestionInfo,
    QuestionsReply,
    TellInfo,
    TellMany,
    TellsReply,
)


async def progress(value: float, message: str) -> None:
    pass


def test_iris_agent_gets_exactly_the_read_only_tools() -> None:
    assert all(TOOLS_BY_NAME[name].read_only for name in READ_ONLY_TOOLS)
    assert {"team_tell", "team_wake", "team_approve", "team_answer", "team_cache_clear"}.isdisjoint(READ_ONLY_TOOLS)
    assert [tool.name for tool in mcp_tool_list(read_only=True)] == list(READ_ONLY_TOOLS)


def test_iris_agent_runs_without_built_in_tools_or_other_mcp_servers() -> None:
    argv = agent_argv("claude", session_id="s-1", resume=False, mcp_config=agent_mcp_config("/run/iris.sock"))
    assert argv[argv.index("--tools") + 1] == ""
    assert "--strict-mcp-config" in argv and "--dangerously-skip-permissions" not in argv
    config = json.loads(argv[argv.index("--mcp-config") + 1])
    assert config["mcpServers"]["iris"]["args"][-2:] == ["--read-only", "--no-autostart"]
    allowed = argv[argv.index("--allowedTools") + 1 : argv.index("--append-system-prompt")]
    assert allowed == [f"mcp__iris__{tool}" for tool in READ_ONLY_TOOLS]
    assert "--resume" in agent_argv("claude", session_id="s-1", resume=True, mcp_config="/home/me/.iris/run/mcp/x.json")


def test_the_tools_iris_agent_called_are_read_from_its_lines() -> None:
    line = {"type": "assistant", "message": {"content": [
        {"type": "text", "text": "let me look"},
        {"type": "tool_use", "name": "mcp__iris__team_teams", "input": {}},
    ]}}
    assert tool_calls(json.dumps(line).encode()) == ["team_teams"]
    assert tool_calls(b'{"type": "result"}') == [] and tool_calls(b"garbage") == []


async def test_a_read_only_shim_refuses_every_other_tool() -> None:
    link = ScriptedLink()
    shim = Shim(link, team=None, cwd="/", env={}, read_only=True)
    output = await shim.call("team_tell", {"toTeam": "alpha", "message": "hi"}, progress)
    assert output.is_error and "unknown tool 'team_tell'" in output.text and "team_teams" in output.text
    assert link.sent == []


async def test_to_teams_is_one_fan_out_request() -> None:
    alpha = TellInfo(id="t1", from_team=None, to_team="alpha", message="hi", status="completed", text="A says hi")
    reply = TellsReply(results=[
        FanOutResult(to_team="alpha", status="completed", tell=alpha),
        FanOutResult(to_team="ghost", status="refused", error_code="unknown_team", error="team 'ghost' ..."),
    ])
    link = ScriptedLink(reply)
    shim = Shim(link, team="beta", cwd="/", env={"IRIS_PARENT_PAIR": "x->beta"})
    args = {"toTeams": ["alpha", "ghost"], "message": "hi", "maxBudgetUsd": 0.5}
    output = await shim.call("team_tell", args, progress)
    (sent,) = link.sent
    assert isinstance(sent, TellMany) and sent.to_teams == ["alpha", "ghost"] and sent.from_team == "beta"
    assert sent.max_budget_usd == 0.5  # each target's claude gets it
    assert sent.parent_pair == "x->beta"
    assert not output.is_error  # one answered
    assert "## alpha (completed)\nA says hi" in output.text and "## ghost (refused)" in output.text
    assert [r["status"] for r in output.data["results"]] == ["completed", "refused"]
    both = await shim.call("team_tell", {"toTeam": "a", "toTeams": ["b"], "message": "hi"}, progress)
    assert both.is_error and "not both" in both.text


async def test_a_team_sees_and_answers_the_questions_asked_of_it() -> None:
    question = QuestionInfo(id="q-1", from_team="beta", to_team="alpha", session_id="s", tell_id="t", question="Go?",
                            context="Go?", confidence=0.95, status="pending", created_at=1.0, expires_at=2.0)
    answered = TellInfo(id="t2", from_team="beta", to_team="alpha", message="yes", status="completed", text="done")
    link = ScriptedLink(QuestionsReply(questions=[question]),
                        AnswerReply(question=question, status="completed", tell=answered))
    shim = Shim(link, team="beta", cwd="/", env={})
    listed = await shim.call("team_questions", {}, progress)
    assert "q-1: alpha asks beta [pending]: Go?" in listed.text
    answer = await shim.call("team_answer", {"questionId": "q-1", "text": "yes"}, progress)
    assert "alpha replied" in answer.text and "done" in answer.text
    ask, reply = link.sent
    assert isinstance(ask, ListQuestions) and ask.for_team == "beta"
    assert isinstance(reply, AnswerQuestion) and reply.as_team == "beta" and reply.text == "yes"


def test_costs_render_for_a_model() -> None:
    row = CostRow(key="alpha", tells=2, cost_usd=0.5, input_tokens=10, output_tokens=3)
    output = render_reply(CostsReply(by="team", since=0.0, rows=[row], total=row))
    assert "- alpha: $0.5 over 2 tells" in output.text and output.data["total"]["tells"] == 2
    one = CostRow(key="iris ask", tells=1, cost_usd=0.1, num_turns=1)
    single = render_reply(CostsReply(by="team", since=0.0, rows=[one], total=one))
    assert "- iris ask: $0.1 over 1 tell (0 input, 0 output, 0 cache-read tokens; 1 turn)" in single.text
    assert single.text.endswith("total: $0.1 over 1 tell")
