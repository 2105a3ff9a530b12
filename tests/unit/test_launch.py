"""The launch of a pair's claude without running anything: how the child reaches Iris's
tools (its own token, the stdio shim, a remote child's endpoint) and its launch spec."""

from __future__ import annotations

import json
from pathlib import Path

from iris_common.config import parse_config
from iris_common.paths import IrisPaths
from irisd.claude.launcher import IrisEndpoint
from irisd.pool.launch import child_access, launch_spec
from irisd.pool.process_machine import Spawn
from irisd.tokens import Access


def paths(tmp_path: Path) -> IrisPaths:
    return IrisPaths(home=tmp_path, socket=tmp_path / "irisd.sock", claude_config_dir=tmp_path / "claude")


def access(tmp_path: Path) -> Access:
    face = Access.open(tmp_path)
    face.child_url = "http://127.0.0.1:1615"
    return face


def test_without_an_http_face_a_local_child_gets_the_stdio_shim_on_irisds_socket(tmp_path: Path) -> None:
    child = child_access(None, team="alpha", label="external->alpha", paths=paths(tmp_path), remote=False)
    assert child.grant is None and child.endpoint is None
    server = json.loads(child.mcp_config)["mcpServers"]["iris"]
    assert str(tmp_path / "irisd.sock") in json.dumps(server) and "external->alpha" in json.dumps(server)


def test_with_an_http_face_a_local_child_gets_its_own_token_in_a_file_never_in_argv(tmp_path: Path) -> None:
    face = access(tmp_path)
    child = child_access(face, team="alpha", label="external->alpha", paths=paths(tmp_path), remote=False)
    assert child.grant is not None and child.endpoint is None
    assert child.mcp_config == str(child.grant.path) and child.grant.token not in child.mcp_config
    assert child.grant.token in child.grant.path.read_text() and face.child_count == 1
    child.grant.revoke()
    assert face.child_count == 0 and not child.grant.path.exists()


def test_a_remote_child_reaches_iris_over_http_only_and_not_at_all_without_the_face(tmp_path: Path) -> None:
    child = child_access(access(tmp_path), team="alpha", label="beta->alpha", paths=paths(tmp_path), remote=True)
    assert child.grant is not None and child.mcp_config == ""
    assert child.endpoint == IrisEndpoint(url="http://127.0.0.1:1615/mcp", token=child.grant.token)
    bare = child_access(None, team="alpha", label="beta->alpha", paths=paths(tmp_path), remote=True)
    assert (bare.grant, bare.mcp_config, bare.endpoint) == (None, "", None)


def test_the_spec_carries_the_teams_permissions_and_the_spawns_session_and_budget(tmp_path: Path) -> None:
    config = f"teams:\n  alpha:\n    path: {tmp_path}\n    permissions: deny\n    allowedTools: [Read]\n"
    team = parse_config(config.encode(), source="config.yaml").team("alpha")
    child = child_access(None, team="alpha", label="external->alpha", paths=paths(tmp_path), remote=False)
    spec = launch_spec(team, child, session_id="s-1", spawn=Spawn(resume=True, max_budget_usd=0.25))
    assert (spec.session_id, spec.resume, spec.max_budget_usd) == ("s-1", True, 0.25)
    assert (spec.permissions, list(spec.allowed_tools), spec.mcp_config) == ("deny", ["Read"], child.mcp_config)
    assert "alpha" in spec.system_prompt and spec.endpoint is None
