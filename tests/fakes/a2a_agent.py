"""A foreign A2A 1.0 agent for the tests: the official ``a2a-sdk`` server (asyncio,
uvicorn) in its own process, standing in for an agent of another framework.

    python tests/fakes/a2a_agent.py [--no-streaming] [--token T] [--bad-card] [--port P]

prints ``listening on http://127.0.0.1:PORT`` once its socket accepts connections.
Its card is at ``/.well-known/agent-card.json``, JSON-RPC at ``/rpc``. What it does
follows the start of the message text:

- ``@ask``: INPUT_REQUIRED asking "Which colour?"; the reply in the same task
  completes it with "you chose: <reply>";
- ``@fail`` / ``@reject``: FAILED / REJECTED with a reason;
- ``@hang``: WORKING until cancelled (CancelTask);
- ``@message``: a direct Message, no task;
- ``@slow:MS``: the answer streamed in 3 pieces MS apart;
- anything else: ``echo #N: <text>``, N counting the messages of the contextId.

``GET /_log`` returns what it received (text, contextId, taskId, metadata, the
Authorization header) and which tasks were cancelled, for the tests to check;
``POST /_reset`` forgets both and the message counts (for a test of its own).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

LOG: dict[str, list[Any]] = {"received": [], "cancelled": []}
TURNS: dict[str, int] = {}


class FakeAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task_id = context.task_id or ""
        context_id = context.context_id or ""
        message = context.message
        LOG["received"].append({
            "text": text,
            "contextId": context_id,
            "taskId": task_id,
            "metadata": MessageToDict(message.metadata) if message is not None else {},
        })
        TURNS[context_id] = TURNS.get(context_id, 0) + 1
        if text.startswith("@message"):
            await event_queue.enqueue_event(new_text_message("a direct message", context_id=context_id))
            return
        updater = TaskUpdater(event_queue, task_id, context_id)
        current = context.current_task
        if current is not None and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.start_work()
            await updater.add_artifact([new_text_part(f"you chose: {text}")], name="answer")
            await updater.complete()
            return
        if current is None and message is not None:
            await event_queue.enqueue_event(new_task_from_user_message(message))
        await updater.start_work()
        if text.startswith("@ask"):
            await updater.requires_input(updater.new_agent_message([new_text_part("Which colour?")]))
        elif text.startswith("@fail"):
            await updater.failed(updater.new_agent_message([new_text_part("the fake agent failed on purpose")]))
        elif text.startswith("@reject"):
            await updater.reject(updater.new_agent_message([new_text_part("not my job")]))
        elif text.startswith("@hang"):
            await asyncio.Event().wait()  # until CancelTask cancels this coroutine
        else:
            delay = 0.0
            if text.startswith("@slow:"):
                delay = int(text.split()[0].removeprefix("@slow:")) / 1000
            answer = f"echo #{TURNS[context_id]}: {text}"
            third = max(1, len(answer) // 3)
            pieces = [answer[:third], answer[third : 2 * third], answer[2 * third :]]
            for index, piece in enumerate(pieces):
                await updater.add_artifact(
                    [new_text_part(piece)], artifact_id="answer", name="answer",
                    append=index > 0, last_chunk=index == len(pieces) - 1,
                )
                if delay and index < len(pieces) - 1:
                    await asyncio.sleep(delay)
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        LOG["cancelled"].append(context.task_id)
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


class RequireToken(BaseHTTPMiddleware):
    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.url.path == "/rpc" and request.headers.get("authorization") != f"Bearer {self.token}":
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401)
        return await call_next(request)


def build_app(port: int, *, streaming: bool, token: str, bad_card: bool) -> Starlette:
    url = f"http://127.0.0.1:{port}/rpc"
    card = AgentCard(
        name="Fake foreign agent",
        description="An a2a-sdk server standing in for another framework's agent",
        version="1.0.0",
        supported_interfaces=[] if bad_card else [
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes", tags=["test"])],
    )
    handler = DefaultRequestHandler(agent_executor=FakeAgent(), task_store=InMemoryTaskStore(), agent_card=card)

    async def log(request: Request) -> Response:
        return JSONResponse(LOG)

    async def reset(request: Request) -> Response:  # a test's fresh start on a shared agent
        for entries in LOG.values():
            entries.clear()
        TURNS.clear()
        return JSONResponse({})

    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/rpc"),
        Route("/_log", log, methods=["GET"]),
        Route("/_reset", reset, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    if token:
        app.add_middleware(RequireToken, token=token)
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-streaming", action="store_true")
    parser.add_argument("--token", default="")
    parser.add_argument("--bad-card", action="store_true")
    parser.add_argument("--port", type=int, default=0)  # 0: any free one
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restarted agent takes its port again
    sock.bind(("127.0.0.1", args.port))
    sock.listen(64)  # connections wait in the backlog until uvicorn serves
    port = sock.getsockname()[1]
    app = build_app(port, streaming=not args.no_streaming, token=args.token, bad_card=args.bad_card)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
