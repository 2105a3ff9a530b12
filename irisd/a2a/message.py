"""The message Iris sends an A2A agent for one tell (pure)."""

from __future__ import annotations

from protocol import a2a
from protocol.limits import MAX_CHAIN_PATH


def outbound_request(
    *,
    tell_id: str,
    message_id: str,
    text: str,
    from_team: str | None,
    to_team: str,
    chain_id: str,
    hops: int,
    context_id: str,
    open_task: str,
    tenant: str,
    streaming: bool,
    path: tuple[str, ...] = (),
) -> a2a.SendMessageRequest:
    """SendMessage's params for a tell. The pair's ``context_id`` (once the agent gave one)
    continues its conversation; ``open_task`` (an INPUT_REQUIRED task of the pair) makes
    this message the reply that continues that task. The relay chain rides in the
    message's metadata, so an Iris on the far side checks its loop guard and hop limit
    (a tell that starts no chain starts one, named after itself): ``hops`` is this tell's
    own hop (0 when nobody's tell waits on it), so the far side's nested tells are one
    further; ``path`` the teams waiting in it (the tell's own ``path``, ending with the
    agent's name here)."""
    chain = a2a.IrisChain(
        chain_id=chain_id or tell_id,
        hops=hops,
        path=list(path[-MAX_CHAIN_PATH:]) or [from_team or "external", to_team],
    )
    message = a2a.Message(
        message_id=message_id,
        role=a2a.Role.USER,
        parts=[a2a.Part(text=text)],
        context_id=context_id,
        task_id=open_task,
        metadata={a2a.IRIS_METADATA_KEY: chain},
    )
    # Polling needs the task's id at once; a stream brings it in its first event.
    configuration = a2a.SendMessageConfiguration(
        accepted_output_modes=["text/plain", "text/markdown", "application/json"],
        return_immediately=not streaming,
    )
    return a2a.SendMessageRequest(message=message, tenant=tenant, configuration=configuration)
