"""The person who asked decides in their own MCP client: a tell started by ``team_tell``
that waits for an approval comes back as an MCP ``input_required`` form (2026-07-28
multi-round-trip input), and the answer decides the approval through the same path as
``iris approve``/``deny``. Driven by the MCP SDK's client with an elicitation callback,
over the stdio ``iris mcp`` and irisd's ``/mcp``; a real irisd, the real claude against
the scripted model (it asks for Bash).

One daemon (``shared``) serves the tests that leave it as they found it, its pairs' claudes
staying warm from test to test; each such test looks only at the approvals and tells it
made (``Since``). The chain-budget tests share a daemon of their own (its budget is
global), and the one that shortens ``approvalTimeout`` has its own."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
import trio
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.session import ElicitationFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from harness import Iris, started, wait_for, wait_until
from protocol.core_messages import UNFINISHED_TELL_STATUSES, TellInfo
from protocol.messages import (
    ApprovalInfo,
    ApprovalsReply,
    Decide,
    GetTell,
    ListApprovals,
    ListTells,
    ReportReply,
    TellReply,
)
from protocol.phases import describe
from scripted_model import ScriptedModel

pytestmark = pytest.mark.claude

WRITE = '@tool:Bash {"command": "echo hi > made.txt"}'
Elicit = ElicitationFnT
FACES = pytest.mark.parametrize("face", ["stdio", "http"])


def answering(action: str, content: dict[str, Any] | None = None) -> tuple[list[types.ElicitRequestParams], Elicit]:
    """An elicitation callback that records each form and gives one answer."""
    forms: list[types.ElicitRequestParams] = []

    async def elicit(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        forms.append(params)
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return forms, elicit


@asynccontextmanager
async def client(iris: Iris, face: str, elicit: Elicit | None, cwd: Path) -> AsyncIterator[Client]:
    """An SDK client of ``iris mcp`` (stdio, in ``cwd``) or of ``/mcp`` (the owner's token),
    on the 2026-07-28 era, declaring elicitation when given a callback."""
    if face == "stdio":
        from e2e.test_mcp_shim import iris_command

        command, *prefix = iris_command()
        params = StdioServerParameters(
            command=command, args=[*prefix, "mcp", "--log-level", "info"], env=iris.env, cwd=cwd
        )
        with (iris.root / "shim.log").open("a") as errlog:
            async with Client(stdio_client(params, errlog=errlog), elicitation_callback=elicit) as connected:
                yield connected
        return
    headers = {"Authorization": f"Bearer {iris.owner_token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(300)) as http,
        Client(
            streamable_http_client(f"{iris.http_url}/mcp", http_client=http), elicitation_callback=elicit
        ) as connected,
    ):
        yield connected


def text_of(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


def pending(iris: Iris) -> list[str]:
    reply = iris.request(ListApprovals())
    assert isinstance(reply, ApprovalsReply)
    return [a.id for a in reply.approvals]


def every_approval(iris: Iris) -> list[ApprovalInfo]:
    reply = iris.request(ListApprovals(include_decided=True))
    assert isinstance(reply, ApprovalsReply)
    return reply.approvals


def tells(iris: Iris, to_team: str | None = None) -> list[TellInfo]:
    reply = iris.request(ListTells(to_team=to_team, limit=1000))
    assert isinstance(reply, ReportReply)
    return reply.tells


class Since:
    """What one test did on a daemon it shares: the approvals and tells new since it began."""

    def __init__(self, iris: Iris) -> None:
        self.iris = iris
        self.approvals_before = {a.id for a in every_approval(iris)}
        self.tells_before = {t.id for t in tells(iris)}

    def approvals(self) -> list[ApprovalInfo]:
        return [a for a in every_approval(self.iris) if a.id not in self.approvals_before]

    def tells(self, to_team: str) -> list[TellInfo]:
        return [t for t in tells(self.iris, to_team) if t.id not in self.tells_before]


def leave_as_found(iris: Iris) -> Iterator[Since]:
    """A test on a shared daemon: it starts with no ``made.txt`` in any team's folder and no
    approval pending; at its end anything it left pending is denied (an error of the test)
    and its tells are waited for, so that the next test finds the pairs idle."""
    for team in iris.teams.values():
        (Path(team["path"]) / "made.txt").unlink(missing_ok=True)
    assert not pending(iris), "an approval was left pending before this test"
    left: list[str] = []
    try:
        yield Since(iris)
    finally:
        left = pending(iris)
        for approval_id in left:
            iris.request(Decide(approval_id=approval_id, allow=False, by="cleanup"))
        wait_for(lambda: not [t for t in tells(iris) if t.status in UNFINISHED_TELL_STATUSES],
                 timeout=120, what="the test's tells to end", every=0.1)
    assert not left, f"the test left approvals pending: {left}"


ASKER = Path(__file__).parents[1] / "fakes" / "asking_mcp.py"
ASKING: dict[str, Any] = {"allowedTools": ["mcp__asker__pick"]}


def asker_files(iris: Iris, folder: Path) -> None:
    """The team in ``folder`` gets its own MCP server ``asker``, which asks its person
    "Which database?" (tests/fakes/asking_mcp.py); claude starts it without asking."""
    import sys

    server = {"type": "stdio", "command": sys.executable, "args": [str(ASKER)]}
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"asker": server}}))
    iris.claude_config.mkdir(parents=True, exist_ok=True)
    (iris.claude_config / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    """alpha, beta and gamma, and delta, whose own MCP server asks (its claude is started by
    the first tell to it, after the files are written)."""
    teams: dict[str, dict[str, Any]] = {"alpha": {}, "beta": {}, "gamma": {}, "delta": ASKING}
    with started(tmp_path_factory.mktemp("elicit"), model_url=model.base_url, claude=claude_bin,
                 teams=teams) as iris:
        asker_files(iris, folder(iris, "delta"))
        yield iris


@pytest.fixture
def since(shared: Iris) -> Iterator[Since]:
    yield from leave_as_found(shared)


def folder(iris: Iris, team: str) -> Path:
    return Path(iris.teams[team]["path"])


def teams(iris: Iris, *names: str) -> tuple[Path, ...]:
    return tuple(folder(iris, name) for name in names)


@FACES
async def test_accept_runs_the_tool_and_the_call_returns_the_answer(shared: Iris, since: Since, face: str) -> None:
    alpha, beta = teams(shared, "alpha", "beta")
    forms, elicit = answering("accept", {"decision": "approve"})
    async with client(shared, face, elicit, alpha) as mcp:
        result = await mcp.call_tool("team_tell", {"toTeam": "beta", "message": WRITE, "timeout": 0})
    assert not result.is_error, text_of(result)
    assert text_of(result).startswith("tool Bash said:")
    assert (beta / "made.txt").read_text() == "hi\n"
    (form,) = forms
    assert isinstance(form, types.ElicitRequestFormParams)
    assert "beta wants to run Bash `echo hi > made.txt` in beta's folder" in form.message
    assert form.requested_schema["properties"]["decision"]["enum"] == ["approve", "deny", "approve and remember"]
    # Decided through the one path every front end uses, by this session.
    (approval,) = since.approvals()
    assert approval.status == "allowed"
    assert approval.decided_by == ("alpha (Claude Code)" if face == "stdio" else "external (Claude Code)")


@FACES
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_no_decision_leaves_the_approval_to_the_other_front_ends(
    shared: Iris, since: Since, face: str, action: str
) -> None:
    alpha, beta = teams(shared, "alpha", "beta")
    forms, elicit = answering(action)
    async with client(shared, face, elicit, alpha) as mcp:
        result = await mcp.call_tool("team_tell", {"toTeam": "beta", "message": WRITE, "timeout": 0})
    (approval_id,) = pending(shared)
    assert len(forms) == 1 and not result.is_error
    said = text_of(result)
    assert f"iris approve {approval_id}" in said and f"iris deny {approval_id}" in said, said
    tell_id = result.structured_content["id"]
    assert result.structured_content["tell_status"] == "awaiting_approval"
    # Another front end decides it: the tell goes on.
    shared.request(Decide(approval_id=approval_id, allow=True, by="test"))
    done = shared.request(GetTell(tell_id=tell_id, wait_ms=120_000))
    assert isinstance(done, TellReply) and done.tell.status == "completed"
    assert (beta / "made.txt").exists()


@FACES
async def test_a_forged_or_replayed_request_state_is_refused(shared: Iris, since: Since, face: str) -> None:
    alpha, beta = teams(shared, "alpha", "beta")
    _, elicit = answering("accept", {"decision": "deny", "reason": "not now"})
    arguments = {"toTeam": "beta", "message": WRITE, "timeout": 0}
    async with client(shared, face, elicit, alpha) as mcp:
        asked = await mcp.session.call_tool("team_tell", arguments, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult) and asked.request_state and asked.input_requests
        state = asked.request_state
        no = types.ElicitResult(action="accept", content={"decision": "deny", "reason": "not now"})
        deny: types.InputResponses = {"approval": no}

        forged = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await mcp.session.call_tool("team_tell", arguments, input_responses=deny, request_state=forged)
        plain = json.dumps({"tell_id": "t", "approval_id": "a", "nonce": "n"})
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await mcp.session.call_tool("team_tell", arguments, input_responses=deny, request_state=plain)
        other = {**arguments, "message": "@tool:Bash {\"command\": \"rm -rf /\"}"}
        with pytest.raises(MCPError, match="Invalid or expired requestState"):  # bound to its call's arguments
            await mcp.session.call_tool("team_tell", other, input_responses=deny, request_state=state)
        assert pending(shared), "nothing was decided by the refused calls"

        first = await mcp.session.call_tool("team_tell", arguments, input_responses=deny, request_state=state)
        assert isinstance(first, types.CallToolResult), first
        replayed = await mcp.session.call_tool("team_tell", arguments, input_responses=deny, request_state=state)
        assert isinstance(replayed, types.CallToolResult) and replayed.is_error
        assert "already given" in text_of(replayed)
    assert not (beta / "made.txt").exists()
    assert [(a.status, a.reason) for a in since.approvals()] == [("denied", "not now")]


async def test_a_client_without_elicitation_is_told_how_to_decide(shared: Iris, since: Since) -> None:
    """Today's behaviour (the call waits as long as it was told to), and a reply that has
    the model ask its person to decide."""
    (alpha,) = teams(shared, "alpha")
    async with client(shared, "stdio", None, alpha) as mcp:
        sent = await mcp.call_tool("team_tell", {"toTeam": "beta", "message": WRITE, "timeout": -1})
        tell_id = sent.structured_content["id"]
        with trio.fail_after(120):
            await wait_until(lambda: pending(shared), every=0.1)
        result = await mcp.call_tool("team_result", {"tellId": tell_id, "wait": 1000})
    (approval_id,) = pending(shared)
    said = text_of(result)
    assert not result.is_error and f"ask your person to run `iris approve {approval_id}`" in said, said
    shared.request(Decide(approval_id=approval_id, allow=False, by="test"))


async def test_the_answer_already_given_elsewhere_wins(shared: Iris, since: Since) -> None:
    """The person answers in the session after someone else decided: the first answer
    stands, and the call still follows the tell to its end."""
    alpha, beta = teams(shared, "alpha", "beta")
    decided = trio.Event()

    async def elicit(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        (approval_id,) = pending(shared)
        shared.request(Decide(approval_id=approval_id, allow=True, by="cli"))
        decided.set()
        return types.ElicitResult(action="accept", content={"decision": "deny"})

    async with client(shared, "stdio", elicit, alpha) as mcp:
        result = await mcp.call_tool("team_tell", {"toTeam": "beta", "message": WRITE, "timeout": 0})
    assert decided.is_set()
    said = text_of(result)
    assert "already allowed by cli" in said and "tool Bash said:" in said, said
    assert (beta / "made.txt").exists()


async def test_an_approval_further_down_the_chain_is_asked_too(shared: Iris, since: Since) -> None:
    """alpha's session asks beta, whose claude asks gamma (over /mcp), whose claude wants
    Bash: the form reaches alpha's session, and its answer runs gamma's tool."""
    alpha, gamma = teams(shared, "alpha", "gamma")
    forms, elicit = answering("accept", {"decision": "approve"})
    nested = "@tool:mcp__iris__team_tell " + json.dumps({"toTeam": "gamma", "message": WRITE, "timeout": 0})
    async with client(shared, "stdio", elicit, alpha) as mcp:
        result = await mcp.call_tool("team_tell", {"toTeam": "beta", "message": nested, "timeout": 0})
    assert not result.is_error, text_of(result)
    (form,) = forms
    assert isinstance(form, types.ElicitRequestFormParams)
    assert "gamma wants to run Bash `echo hi > made.txt` in gamma's folder" in form.message
    assert "tool Bash said:" in text_of(result), text_of(result)
    assert (gamma / "made.txt").read_text() == "hi\n"
    assert [(a.from_team, a.to_team, a.status) for a in since.approvals()] == [("beta", "gamma", "allowed")]


# --- the real claude as the person's Claude Code session ----------------------------------

TELL_TOOL = "mcp__iris__team_tell"


class Session:
    """The person's ``claude -p`` with Iris (``iris mcp``) as its MCP server, in ``cwd``; with
    ``host`` it takes stream-json input, so the forms reach this test as ``control_request``
    lines of subtype ``elicitation`` (what a host such as an IDE answers)."""

    def __init__(self, iris: Iris, cwd: Path, *, host: bool) -> None:
        from e2e.test_mcp_shim import iris_command

        command, *prefix = iris_command()
        config = {"mcpServers": {"iris": {"type": "stdio", "command": command, "args": [*prefix, "mcp"]}}}
        env = {**iris.env, "CLAUDE_CONFIG_DIR": str(iris.root / "person-claude")}
        argv = [iris.claude, "-p", "--output-format", "stream-json", "--verbose", "--strict-mcp-config"]
        argv += ["--mcp-config", json.dumps(config), "--allowedTools", TELL_TOOL]
        if host:
            argv += ["--input-format", "stream-json"]
        self.host = host
        self.process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )

    def ask(self, prompt: str, answer: dict[str, Any] | None = None, timeout: float = 180.0) -> tuple[str, list[Any]]:
        """Send ``prompt``; answer each elicitation with ``answer``; the result's text and
        the elicitation requests seen."""
        assert self.process.stdin is not None and self.process.stdout is not None
        if self.host:
            message = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}}
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        else:
            self.process.stdin.write(prompt)
            self.process.stdin.close()
        forms: list[Any] = []
        deadline = time.monotonic() + timeout
        for raw in self.process.stdout:
            assert time.monotonic() < deadline, "claude took too long"
            line = json.loads(raw)
            if line.get("type") == "control_request" and line["request"].get("subtype") == "elicitation":
                forms.append(line["request"])
                reply = {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": line["request_id"], "response": answer},
                }
                self.process.stdin.write(json.dumps(reply) + "\n")
                self.process.stdin.flush()
            if line.get("type") == "result":
                return str(line["result"]), forms
        raise AssertionError(f"claude ended without a result ({self.process.wait()})")

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        assert self.process.stdout is not None
        self.process.stdout.close()


def tell_through_claude(to_team: str, message: str) -> str:
    arguments = {"toTeam": to_team, "message": message, "timeout": 0}
    return f"@tool:{TELL_TOOL} " + json.dumps(arguments)


def test_claude_passes_the_form_to_its_host_and_the_answer_runs_the_tool(shared: Iris, since: Since) -> None:
    alpha, beta = teams(shared, "alpha", "beta")
    session = Session(shared, alpha, host=True)
    try:
        approve = {"action": "accept", "content": {"decision": "approve"}}
        said, forms = session.ask(tell_through_claude("beta", WRITE), approve)
    finally:
        session.close()
    (form,) = forms
    assert form["mcp_server_name"] == "iris"
    assert "beta wants to run Bash `echo hi > made.txt`" in form["message"]
    assert form["requested_schema"]["properties"]["decision"]["enum"][0] == "approve"
    assert said.startswith(f"tool {TELL_TOOL} said:") and "tool Bash said:" in said, said
    assert (beta / "made.txt").read_text() == "hi\n"
    assert [(a.status, a.decided_by) for a in since.approvals()] == [("allowed", "alpha (Claude Code)")]


def test_plain_claude_p_cancels_and_the_model_learns_how_to_decide(shared: Iris, since: Since) -> None:
    alpha, beta = teams(shared, "alpha", "beta")
    session = Session(shared, alpha, host=False)
    try:
        said, forms = session.ask(tell_through_claude("beta", WRITE))
    finally:
        session.close()
    assert forms == []
    (approval_id,) = pending(shared)
    assert said.startswith(f"tool {TELL_TOOL} said:") and f"iris approve {approval_id}" in said, said
    assert not (beta / "made.txt").exists()
    shared.request(Decide(approval_id=approval_id, allow=False, by="test"))


def test_iris_mcp_speaks_2026_07_28_as_claude_does(shared: Iris) -> None:
    """What claude 2.1.330 sends (probed): ``server/discover``, then no ``initialize``; the
    version and capabilities in each request's ``_meta``; results carry ``resultType``."""
    from e2e.test_mcp_shim import iris_command

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}},
    }
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "team_teams", "arguments": {}, "_meta": meta}},
    ]
    with subprocess.Popen(
        [*iris_command(), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, env=shared.env, cwd=shared.root,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
            process.stdin.flush()
            # by id: answers may come in another order (the SDK's server runs requests at once,
            # and tools/list and tools/call take iris mcp's fast path)
            replies = {reply["id"]: reply for reply in (json.loads(process.stdout.readline()) for _ in range(3))}
            process.stdin.close()
            assert process.wait(timeout=30) == 0
        finally:
            if process.poll() is None:
                process.kill()
    discovered, listed, called = (replies[request_id]["result"] for request_id in (1, 2, 3))
    assert "2026-07-28" in discovered["supportedVersions"] and "tools" in discovered["capabilities"]
    assert "team_tell" in discovered["instructions"]
    assert listed["resultType"] == "complete" and called["resultType"] == "complete"
    assert "alpha" in called["content"][0]["text"]


# --- a team's own MCP server asks for input -------------------------------------------------
# On the shared daemon that team is delta; the test that shortens approvalTimeout (a global
# setting) starts a daemon of its own, whose beta asks.

PICK = "@tool:mcp__asker__pick {}"


def waiting_input(iris: Iris) -> ApprovalInfo:
    """The input request the asker's form became, once it is pending."""

    def found() -> ApprovalInfo | None:
        reply = iris.request(ListApprovals())
        assert isinstance(reply, ApprovalsReply)
        return next((a for a in reply.approvals if a.kind == "input"), None)

    asked: ApprovalInfo = wait_for(found, timeout=120, what="the MCP server's input request", every=0.2)
    return asked


def test_a_teams_own_mcp_server_asks_the_person_and_the_answer_reaches_it(shared: Iris, since: Since) -> None:
    """The team's claude passes its MCP server's form to irisd (a ``control_request`` of
    subtype ``elicitation``): it waits as an input request, the tell says so, and the
    person's answer (``iris approve ID --field``) reaches the server: the tool says it."""
    sent = shared.cli_json("tell", "delta", PICK, "--timeout", "-1")
    asked = waiting_input(shared)
    assert (asked.tool_name, asked.message) == ("asker", "Which database?")
    assert asked.schema["required"] == ["name"]
    tell = shared.request(GetTell(tell_id=sent["id"], wait_ms=0))
    assert isinstance(tell, TellReply) and tell.tell.status == "awaiting_approval"
    assert tell.tell.phase is not None and describe(tell.tell.phase) == "waiting for your input: asker: Which database?"
    listed = shared.cli("approvals").stdout
    assert "asks for your input through its MCP server asker" in listed and "name (Database: string) *" in listed
    # A wrong answer is refused and the form stays pending; a right one reaches the server.
    refused = shared.cli("approve", asked.id, "--field", "colour=red")
    assert refused.returncode != 0 and "the form has no field 'colour'" in refused.stderr, refused.stderr
    assert shared.cli("approve", asked.id[:10], "--field", "name=postgres").stdout.strip() == "asker: answered"
    done = shared.request(GetTell(tell_id=sent["id"], wait_ms=120_000))
    assert isinstance(done, TellReply) and done.tell.status == "completed", done
    assert done.tell.text == 'tool mcp__asker__pick said: accept: {"name": "postgres"}'
    assert [(a.status, a.content) for a in since.approvals()] == [("allowed", {"name": "postgres"})]

    # Asked again: 'iris deny' declines the form.
    again = shared.cli_json("tell", "delta", PICK, "--timeout", "-1")
    second = waiting_input(shared)
    assert shared.cli("deny", second.id).stdout.strip() == "asker: declined"
    done = shared.request(GetTell(tell_id=again["id"], wait_ms=120_000))
    assert isinstance(done, TellReply) and done.tell.text == "tool mcp__asker__pick said: decline: null", done


def test_an_unanswered_input_request_answers_decline(iris: Iris) -> None:
    """Nobody answering within ``approvalTimeout`` declines the form."""
    asker_files(iris, iris.add_team("beta", **ASKING))
    iris.settings["approvalTimeout"] = 2500
    iris.start()
    told = iris.cli_json("tell", "beta", PICK, "--timeout", "150000")
    assert told["status"] == "completed" and told["text"] == "tool mcp__asker__pick said: decline: null", told
    reply = iris.request(ListApprovals(include_decided=True))
    assert isinstance(reply, ApprovalsReply)
    ((status, by, reason),) = [(a.status, a.decided_by, a.reason) for a in reply.approvals]
    assert (status, by) == ("denied", "timeout") and reason.endswith("the request was declined"), reason


async def test_the_servers_form_reaches_the_session_that_asked_and_its_answer_the_server(
    shared: Iris, since: Since
) -> None:
    """``team_tell`` from an MCP client that declared elicitation: the team's MCP server's
    form comes back as the call's ``input_required`` form (its schema as the server asked
    it), and the person's answer reaches the server; a wrong answer is refused and asked again."""
    (alpha,) = teams(shared, "alpha")
    # Over stdio only: over /mcp the SDK client leaves the SSE streams of a call it retried
    # unclosed, and their finalizers run later, in whatever test then runs (pytest's
    # unraisable-warning check fails it). The shim's code is the same on both faces.
    answers: Iterator[dict[str, Any]] = iter([{"colour": "red"}, {"name": "sqlite"}])
    forms: list[types.ElicitRequestParams] = []

    async def elicit(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        forms.append(params)
        return types.ElicitResult(action="accept", content=next(answers))

    async with client(shared, "stdio", elicit, alpha) as mcp:
        result = await mcp.call_tool("team_tell", {"toTeam": "delta", "message": PICK, "timeout": 0})
    assert not result.is_error, text_of(result)
    assert text_of(result) == 'tool mcp__asker__pick said: accept: {"name": "sqlite"}'
    first, again = forms
    assert isinstance(first, types.ElicitRequestFormParams) and again.message == first.message
    assert "delta's MCP server asker asks for your input" in first.message and first.message.endswith("Which database?")
    assert first.requested_schema["properties"]["name"] == {"type": "string", "title": "Database"}
    (approval,) = since.approvals()
    assert (approval.kind, approval.status, approval.content) == ("input", "allowed", {"name": "sqlite"})


def test_the_servers_form_reaches_the_host_of_the_claude_that_asked(shared: Iris, since: Since) -> None:
    """The whole way with the real claude on both ends: delta's MCP server asks, delta's
    claude passes it to irisd, alpha's ``team_tell`` (in alpha's claude) returns it as a
    form, alpha's claude passes it to its host, and the host's answer reaches delta's server."""
    (alpha,) = teams(shared, "alpha")
    session = Session(shared, alpha, host=True)
    try:
        said, forms = session.ask(tell_through_claude("delta", PICK), {"action": "accept", "content": {"name": "pg"}})
    finally:
        session.close()
    (form,) = forms
    assert form["mcp_server_name"] == "iris" and form["message"].endswith("Which database?"), form
    assert form["requested_schema"]["required"] == ["name"]
    assert said.startswith(f"tool {TELL_TOOL} said:"), said
    told = json.loads(said.removeprefix(f"tool {TELL_TOOL} said:"))  # the model reads the structured result
    assert told["text"] == 'tool mcp__asker__pick said: accept: {"name": "pg"}', told


# --- a chain of nested tells at its budget (settings.budget.askToExceed) ----------------------
# The budget is global: these two share a daemon of their own.


@pytest.fixture(scope="module")
def budgeted(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel, claude_bin: Path) -> Iterator[Iris]:
    with started(tmp_path_factory.mktemp("budget"), model_url=model.base_url, claude=claude_bin,
                 teams={"alpha": {}, "beta": {}, "gamma": {}},
                 settings={"budget": {"chainUsd": 0, "askToExceed": 0.5}}) as iris:
        yield iris


@pytest.fixture
def since_budgeted(budgeted: Iris) -> Iterator[Since]:
    yield from leave_as_found(budgeted)


@pytest.mark.parametrize("decision", ["continue", "stop"])
async def test_a_chain_at_its_budget_asks_the_session_whether_to_go_on(
    budgeted: Iris, since_budgeted: Since, decision: str
) -> None:
    """alpha's session asks beta, whose claude asks gamma; the chain's budget (chainUsd 0) is
    reached: the form asks "continue for up to $0.5 more?". continue: gamma's tell is sent;
    stop: it is refused, and beta's model reads why."""
    (alpha,) = teams(budgeted, "alpha")
    forms, elicit = answering("accept", {"decision": decision})
    nested = "@tool:mcp__iris__team_tell " + json.dumps({"toTeam": "gamma", "message": "hello", "timeout": 0})
    async with client(budgeted, "stdio", elicit, alpha) as mcp:
        result = await mcp.call_tool("team_tell", {"toTeam": "beta", "message": nested, "timeout": 0})
    assert not result.is_error, text_of(result)
    (form,) = forms
    assert isinstance(form, types.ElicitRequestFormParams)
    assert "its next tell goes to gamma. Continue for up to $0.5 more?" in form.message, form.message
    assert form.requested_schema["properties"]["decision"]["enum"] == ["continue", "stop"]
    said = text_of(result)
    (approval,) = since_budgeted.approvals()
    assert (approval.kind, approval.from_team, approval.to_team) == ("budget", "alpha", "beta")
    to_gamma = [(t.from_team, t.status) for t in since_budgeted.tells("gamma")]
    if decision == "continue":
        assert approval.status == "allowed" and "not sent" not in said, said
        assert to_gamma == [("beta", "completed")], to_gamma
    else:
        assert approval.status == "denied"
        assert "not sent: this chain of nested tells has spent" in said, said
        assert "(you were asked to let it go on and did not)" in said, said


async def test_a_fan_out_asks_each_decision_one_form_at_a_time(shared: Iris, since: Since) -> None:
    """``toTeams``: beta's and gamma's claudes both want Bash; the session gets one form per
    approval, one after the other, and then every team's answer."""
    alpha, beta, gamma = teams(shared, "alpha", "beta", "gamma")
    forms, elicit = answering("accept", {"decision": "approve"})
    async with client(shared, "stdio", elicit, alpha) as mcp:
        result = await mcp.call_tool("team_tell", {"toTeams": ["beta", "gamma"], "message": WRITE, "timeout": 0})
    assert not result.is_error, text_of(result)
    asked = sorted(f.message.split(" wants to run")[0].removeprefix("Iris: ") for f in forms)
    assert asked == ["beta", "gamma"], [f.message for f in forms]
    said = text_of(result)
    assert "## beta (completed)" in said and "## gamma (completed)" in said and said.count("tool Bash said:") == 2, said
    assert (beta / "made.txt").read_text() == (gamma / "made.txt").read_text() == "hi\n"
    assert sorted((a.to_team, a.status) for a in since.approvals()) == [("beta", "allowed"), ("gamma", "allowed")]
