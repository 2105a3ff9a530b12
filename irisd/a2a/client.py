"""JSON-RPC to one A2A agent over HTTP, on trio (httpx2, through anyio).

Why httpx2 rather than the a2a-sdk client: it is already installed (the MCP SDK's own
HTTP client), runs under trio, and costs 0.27 s to import once, at the first A2A tell;
the a2a-sdk client pulls protobuf, pydantic and google-api-core (0.67 s to import,
measured here) for what is a few JSON requests and an SSE reader, and Iris has the
A2A types already as msgspec Structs (``protocol/a2a.py``).

Every failure of the transport or of the agent's answers becomes one ``A2AAgentError``
(``_translate``): what happened, where, and the fix.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx2
import msgspec

from irisd.a2a.card import CardFacts, check_card
from protocol import a2a
from protocol.errors import A2AAgentError

T = TypeVar("T")

CONNECT_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 60.0  # one answer to a request (a stream has no read limit: the tell's silence limit rules)
MAX_EVENT_BYTES = 8 * 1024 * 1024  # one SSE event, one JSON answer

_ids = itertools.count(1)
_send_decoder = msgspec.json.Decoder(a2a.JsonRpcResponse[a2a.SendMessageResponse])
_task_decoder = msgspec.json.Decoder(a2a.JsonRpcResponse[a2a.Task])
_stream_decoder = msgspec.json.Decoder(a2a.JsonRpcResponse[a2a.StreamResponse])


class SseParser:
    """Server-sent events, line by line: ``line()`` returns an event's data when a blank
    line ends it. Only ``data:`` fields matter to A2A; comments and others are skipped."""

    def __init__(self, limit: int = MAX_EVENT_BYTES) -> None:
        self._data: list[str] = []
        self._size = 0
        self._limit = limit

    def line(self, line: str) -> str | None:
        if not line:
            if not self._data:
                return None
            data, self._data, self._size = "\n".join(self._data), [], 0
            return data
        field, _, value = line.partition(":")
        if field == "data":
            value = value.removeprefix(" ")
            self._size += len(value)
            if self._size > self._limit:
                raise A2AAgentError(f"an event of the agent's stream is over {self._limit // 1024 // 1024} MiB")
            self._data.append(value)
        return None

    def end(self) -> str | None:
        """The stream closed: a last event not ended by a blank line still counts."""
        return self.line("")


class AgentClient:
    """One agent's card and JSON-RPC methods, over ``http`` (owned by the caller)."""

    def __init__(self, http: httpx2.AsyncClient, *, team: str, card_url: str, headers: dict[str, str]) -> None:
        self.http = http
        self.team = team
        self.card_url = card_url
        self.headers = headers
        self.agent = f"the A2A agent of team {team!r}"

    async def fetch_card(self) -> CardFacts:
        with self._translate(f"fetching its card at {self.card_url}"):
            response = await self.http.get(self.card_url, headers=self.headers, timeout=CALL_TIMEOUT_S)
            self._check_status(response, self.card_url)
        return check_card(response.content, url=self.card_url, team=self.team)

    async def send_message(self, card: CardFacts, params: a2a.SendMessageRequest) -> a2a.SendMessageResponse:
        return await self._call(card, "SendMessage", params, _send_decoder)

    async def get_task(self, card: CardFacts, task_id: str) -> a2a.Task:
        return await self._call(card, "GetTask", a2a.GetTaskRequest(id=task_id, tenant=card.tenant), _task_decoder)

    async def cancel_task(self, card: CardFacts, task_id: str) -> a2a.Task:
        request = a2a.CancelTaskRequest(id=task_id, tenant=card.tenant)
        return await self._call(card, "CancelTask", request, _task_decoder)

    async def stream_message(
        self,
        card: CardFacts,
        params: a2a.SendMessageRequest,
        on_event: Callable[[a2a.StreamResponse], Awaitable[bool]],
    ) -> None:
        """SendStreamingMessage: each event goes to ``on_event`` until it returns True (the
        tell has its ending) or the agent closes the stream. Cancellation closes it."""
        body = self._request("SendStreamingMessage", params)
        headers = self._rpc_headers() | {"Accept": "text/event-stream"}
        decoder = _stream_decoder
        with self._translate(f"streaming from {card.rpc_url}"):
            timeout = httpx2.Timeout(CONNECT_TIMEOUT_S, read=None)
            request = self.http.stream("POST", card.rpc_url, content=body, headers=headers, timeout=timeout)
            async with request as response:
                self._check_status(response, card.rpc_url)
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    # An error answers with a plain JSON-RPC response, not a stream.
                    raw = await response.aread()
                    self._result(decoder, raw, "SendStreamingMessage")
                    raise A2AAgentError(
                        f"{self.agent} answered SendStreamingMessage with {response.headers.get('content-type')!r}, "
                        "not an event stream"
                    )
                parser = SseParser()
                async for line in response.aiter_lines():
                    data = parser.line(line)
                    if data is None:
                        continue
                    if await on_event(self._result(decoder, data.encode(), "SendStreamingMessage")):
                        return
                data = parser.end()
                if data is not None:
                    await on_event(self._result(decoder, data.encode(), "SendStreamingMessage"))

    # --- inside --------------------------------------------------------------------------------

    async def _call(
        self, card: CardFacts, method: str, params: Any, decoder: msgspec.json.Decoder[a2a.JsonRpcResponse[T]]
    ) -> T:
        with self._translate(f"calling {method} at {card.rpc_url}"):
            response = await self.http.post(
                card.rpc_url, content=self._request(method, params), headers=self._rpc_headers(),
                timeout=CALL_TIMEOUT_S,
            )
            self._check_status(response, card.rpc_url)
        return self._result(decoder, response.content, method)

    def _request(self, method: str, params: Any) -> bytes:
        request = a2a.JsonRpcRequest[Any](jsonrpc=a2a.JSONRPC_VERSION, method=method, id=next(_ids), params=params)
        return a2a.encoder.encode(request)

    def _rpc_headers(self) -> dict[str, str]:
        return self.headers | {a2a.VERSION_HEADER: a2a.PROTOCOL_VERSION, "Content-Type": "application/json"}

    def _result(self, decoder: msgspec.json.Decoder[a2a.JsonRpcResponse[T]], raw: bytes, method: str) -> T:
        if len(raw) > MAX_EVENT_BYTES:
            raise A2AAgentError(f"{self.agent} answered {method} with over {MAX_EVENT_BYTES // 1024 // 1024} MiB")
        try:
            response = decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise A2AAgentError(
                f"{self.agent} answered {method} with something that is not A2A 1.0 JSON-RPC ({exc}); "
                "check that it speaks A2A 1.0 (Iris sends the A2A-Version: 1.0 header)"
            ) from None
        if not isinstance(response.error, msgspec.UnsetType):
            raise AgentRpcError(self.agent, method, response.error)
        if isinstance(response.result, msgspec.UnsetType):
            raise A2AAgentError(f"{self.agent} answered {method} with neither a result nor an error")
        result: T = response.result
        return result

    def _check_status(self, response: httpx2.Response, url: str) -> None:
        status = response.status_code
        if status in (401, 403):
            raise A2AAgentError(
                f"{self.agent} refused Iris at {url} (HTTP {status}); give it the credentials it wants in "
                f"'teams.{self.team}.headers' in config.yaml (e.g. Authorization: \"Bearer ${{TOKEN}}\" with TOKEN "
                "in irisd's environment), then 'iris reload'"
            )
        if status == 404:
            raise A2AAgentError(
                f"{self.agent} has nothing at {url} (HTTP 404); check 'teams.{self.team}.a2a' (the agent card's URL)"
            )
        if status >= 400 and not response.headers.get("content-type", "").startswith("application/json"):
            raise A2AAgentError(f"{self.agent} answered HTTP {status} at {url}; see the agent's own log")

    @contextmanager
    def _translate(self, doing: str) -> Iterator[None]:
        """The one mapping from transport failures to what a person can do."""
        try:
            yield
        except httpx2.ConnectError as exc:
            raise A2AAgentError(
                f"cannot reach {self.agent} ({doing}): {exc or 'connection refused'}; check that the agent runs "
                f"and that 'teams.{self.team}.a2a' in config.yaml is its card's URL"
            ) from None
        except httpx2.TimeoutException:
            raise A2AAgentError(
                f"{self.agent} did not answer in time ({doing}); check that it runs and is not overloaded"
            ) from None
        except httpx2.RemoteProtocolError as exc:
            raise A2AAgentError(f"{self.agent} broke the connection ({doing}): {exc}") from None
        except httpx2.TransportError as exc:
            raise A2AAgentError(f"the connection to {self.agent} failed ({doing}): {exc}") from None


class AgentRpcError(A2AAgentError):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, agent: str, method: str, error: a2a.JsonRpcError) -> None:
        super().__init__(f"{agent} answered {method} with error {error.code}: {error.message}")
        self.rpc_code = error.code
