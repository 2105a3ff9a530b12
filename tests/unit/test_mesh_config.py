"""settings.mesh: decoded, defaulted and refused with the key and the fix."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from iris_common.config import IrisConfig, parse_config
from iris_common.mesh import default_name
from irisd.reload import plan_reload
from protocol.errors import ConfigError


def parse(mesh: str, tmp_path: Path) -> IrisConfig:
    return parse_config(
        f"settings:\n  mesh:\n{mesh}\nteams:\n"
        f"  backend:\n    path: {tmp_path}\n  web:\n    path: {tmp_path}\n".encode(),
        source="config.yaml",
    )


def test_defaults_offer_every_team_to_every_irisd(tmp_path: Path) -> None:
    config = parse("    url: nats://127.0.0.1:4222", tmp_path)
    assert config.mesh is not None
    assert config.mesh.servers == ("nats://127.0.0.1:4222",)
    assert config.mesh.name == default_name() and "." not in config.mesh.name
    assert config.mesh.offers("web") and config.mesh.allows("anyone")


def test_a_host_name_becomes_a_valid_irisd_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "build box.lan")
    assert default_name() == "build-box"


def test_several_servers_credentials_offer_and_allow(tmp_path: Path) -> None:
    config = parse(
        "    url: [nats://a:4222, tls://b:4222]\n    name: ws-1\n    user: ws-1\n    password: pw\n"
        "    offer: [backend]\n    allow: [ws-2]",
        tmp_path,
    )
    mesh = config.mesh
    assert mesh is not None
    assert mesh.servers == ("nats://a:4222", "tls://b:4222") and (mesh.user, mesh.password) == ("ws-1", "pw")
    assert mesh.offers("backend") and not mesh.offers("web")
    assert mesh.allows("ws-2") and not mesh.allows("ws-3")


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        ("    url: http://a:4222", r"settings\.mesh\.url' has 'http://a:4222'; write a NATS server URL"),
        ("    url: []", r"settings\.mesh\.url' is empty"),
        ("    url: nats://a\n    name: ws.1", r"settings\.mesh\.name' is 'ws\.1'.*no dots"),
        ("    url: nats://a\n    user: me", r"settings\.mesh\.user' is given without 'password'"),
        ("    url: nats://a\n    password: pw", r"settings\.mesh\.password' is given without 'user'"),
        ("    url: nats://a\n    token: t\n    creds: /x", r"gives token and creds; .* keep one"),
        ("    url: nats://a\n    creds: /no/such.creds", r"mesh\.creds' is '/no/such\.creds', which is not a file"),
        ("    url: nats://a\n    offer: [api]", r"mesh\.offer\[0\]' names 'api', which is not a team.*known: backend"),
        ("    url: nats://a\n    allow: ['a b']", r"settings\.mesh\.allow\[0\]' is 'a b'"),
        ("    url: nats://a\n    urls: x", r"unknown key 'settings\.mesh\.urls'"),
        ("    name: ws-1", r"settings\.mesh.*url"),
    ],
)
def test_mistakes_name_the_key_and_the_fix(lines: str, says: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=says):
        parse(lines, tmp_path)


def test_a_reload_applies_a_changed_mesh_at_once(tmp_path: Path) -> None:
    old = parse("    url: nats://a:4222\n    name: ws-1", tmp_path)
    new = parse("    url: nats://a:4222\n    name: ws-1\n    allow: [ws-2]", tmp_path)
    plan = plan_reload(old, new)
    assert plan.settings == ("mesh",) and plan.at_restart == ()
