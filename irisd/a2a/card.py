"""An A2A agent's card, checked for what Iris needs of it (pure: bytes in, facts out).

Iris needs a name, a JSON-RPC interface of protocol 1.x with an http(s) URL, and to know
whether the agent streams. Anything else on the card is the agent's business. Every
problem is an ``A2AAgentError`` saying what is wrong, where, and what to do.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import msgspec

from protocol import a2a
from protocol.errors import A2AAgentError

# Required by the spec, not needed by Iris: missing ones are taken as empty.
LENIENT: dict[str, object] = {
    "description": "", "version": "", "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [],
    "skills": [], "supportedInterfaces": [],  # none: said below, as "offers nothing"
}


class CardFacts(msgspec.Struct, frozen=True):
    name: str
    rpc_url: str  # where JSON-RPC requests go
    tenant: str  # sent in each request when the interface names one
    streaming: bool
    protocol_version: str


def card_url(configured: str) -> str:
    """The card's URL: as configured when it names a file, else the well-known path under it
    (so ``a2a: https://agent.example`` works as well as the full card URL)."""
    parts = urlsplit(configured)
    if parts.path.endswith(".json"):
        return configured
    return urljoin(configured.rstrip("/") + "/", a2a.AGENT_CARD_PATH.lstrip("/"))


def check_card(raw: bytes, *, url: str, team: str) -> CardFacts:
    """The facts of the card at ``url`` (fetched for ``team``); A2AAgentError if it is not
    an A2A 1.x card Iris can use."""
    where = f"team {team!r}: the agent card at {url}"
    try:
        fields = msgspec.json.decode(raw)
        if isinstance(fields, dict) and "supportedInterfaces" not in fields and "url" in fields:
            raise A2AAgentError(
                f"{where} is an A2A 0.x card (a top-level 'url', no 'supportedInterfaces'); Iris speaks A2A 1.0: "
                "upgrade the agent (or its A2A library) to 1.0"
            )
        if isinstance(fields, dict):
            # Lenient about what Iris does not use: a card that leaves these out still works.
            for key, empty in LENIENT.items():
                fields.setdefault(key, empty)
        card = msgspec.convert(fields, a2a.AgentCard)
    except msgspec.ValidationError as exc:
        raise A2AAgentError(
            f"{where} is not an A2A 1.0 agent card ({exc}); check that 'teams.{team}.a2a' is the card's URL "
            "and that the agent speaks A2A 1.0"
        ) from None
    except (msgspec.DecodeError, RecursionError):
        raise A2AAgentError(
            f"{where} is not JSON; check that 'teams.{team}.a2a' is the URL of the agent card "
            "(usually ending in /.well-known/agent-card.json)"
        ) from None
    if not card.name.strip():
        raise A2AAgentError(f"{where} has no name; the agent's card must name it")
    interface = pick_interface(card.supported_interfaces)
    if interface is None:
        offered = ", ".join(f"{i.protocol_binding} {i.protocol_version}" for i in card.supported_interfaces)
        raise A2AAgentError(
            f"{where} offers no JSON-RPC interface of A2A 1.x (it offers: {offered or 'nothing'}); "
            "Iris speaks A2A 1.0 over JSON-RPC: enable that binding on the agent"
        )
    scheme = urlsplit(interface.url).scheme.lower()
    if scheme not in ("http", "https"):
        raise A2AAgentError(f"{where} gives JSON-RPC URL {interface.url!r}, which is not http(s)")
    return CardFacts(
        name=card.name,
        rpc_url=interface.url,
        tenant=interface.tenant,
        streaming=bool(card.capabilities.streaming),
        protocol_version=interface.protocol_version,
    )


def pick_interface(interfaces: list[a2a.AgentInterface]) -> a2a.AgentInterface | None:
    """The first JSON-RPC interface of protocol 1.x (the card lists them in preference order)."""
    for interface in interfaces:
        major = interface.protocol_version.split(".")[0]
        if interface.protocol_binding.upper() == a2a.JSONRPC_BINDING and major == "1":
            return interface
    return None
