"""The A2A 1.0 wire types (a2aproject/A2A ``specification/a2a.proto``, JSON-RPC binding).

Pure msgspec Structs, no I/O: irisd's inbound face (every team an A2A agent) and the
outbound client (an A2A agent as a team) both encode and decode with them.

How the proto maps onto JSON here (ProtoJSON, spec section 5.5):

* field names are camelCase on the wire (``rename="camel"``); defaults are omitted;
  unknown fields are ignored (spec 5.7: forward compatibility);
* enums are their proto names as strings (``TASK_STATE_WORKING``, ``ROLE_USER``);
* a proto ``oneof`` is a Struct whose members are all optional, exactly one set
  (``Part``, ``SendMessageResponse``, ``StreamResponse``, ``SecurityScheme``);
* ``bytes`` is base64 (msgspec's own encoding of ``bytes``); timestamps are ISO 8601
  strings in UTC (``2026-03-12T10:00:00.000Z``);
* a ``Task``'s ``artifacts`` and ``history`` are ``UNSET`` rather than empty when absent,
  because ListTasks must omit ``artifacts`` unless asked but may send an empty list
  when asked (spec 3.1.4).
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Final, Generic, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from protocol.limits import ChainHops, ChainPath

PROTOCOL_VERSION: Final = "1.0"
VERSION_HEADER: Final = "A2A-Version"
# A request without the header speaks 0.3 (spec 3.6.2), which Iris does not serve.
DEFAULT_VERSION: Final = "0.3"
AGENT_CARD_PATH: Final = "/.well-known/agent-card.json"
JSONRPC_BINDING: Final = "JSONRPC"

# Where an Iris relay chain rides in a Message's metadata, so a loop or a chain too long
# is caught across the A2A boundary: ``metadata["iris"] = IrisChain(...)``.
IRIS_METADATA_KEY: Final = "iris"

Method = Literal[
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "GetExtendedAgentCard",
]
STREAMING_METHODS: Final = frozenset({"SendStreamingMessage", "SubscribeToTask"})


class _Wire(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Base of every A2A object: camelCase names, defaults left out."""


# --- enums --------------------------------------------------------------------------


class TaskState(enum.StrEnum):
    UNSPECIFIED = "TASK_STATE_UNSPECIFIED"
    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    REJECTED = "TASK_STATE_REJECTED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"


TERMINAL_STATES: Final = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED})
# A blocking SendMessage returns on these as well as on the terminal ones (spec 3.2.2).
INTERRUPTED_STATES: Final = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})


class Role(enum.StrEnum):
    UNSPECIFIED = "ROLE_UNSPECIFIED"
    USER = "ROLE_USER"
    AGENT = "ROLE_AGENT"


# --- content --------------------------------------------------------------------------


class Part(_Wire):
    """One piece of content: exactly one of ``text``, ``raw`` (file bytes), ``url`` (file by
    reference) or ``data`` (any JSON value, ``null`` included, hence ``UNSET``)."""

    text: str | None = None
    raw: bytes | None = None
    url: str | None = None
    data: Any | UnsetType = UNSET
    metadata: dict[str, Any] | None = None
    filename: str = ""
    media_type: str = ""


class Message(_Wire):
    message_id: str
    role: Role
    parts: list[Part]
    context_id: str = ""
    task_id: str = ""
    metadata: dict[str, Any] | None = None
    extensions: list[str] = []
    reference_task_ids: list[str] = []


class Artifact(_Wire):
    artifact_id: str
    parts: list[Part]
    name: str = ""
    description: str = ""
    metadata: dict[str, Any] | None = None
    extensions: list[str] = []


class TaskStatus(_Wire):
    state: TaskState
    message: Message | None = None
    timestamp: str = ""


class Task(_Wire):
    id: str
    status: TaskStatus
    context_id: str = ""
    artifacts: list[Artifact] | UnsetType = UNSET
    history: list[Message] | UnsetType = UNSET
    metadata: dict[str, Any] | None = None


class TaskStatusUpdateEvent(_Wire):
    task_id: str
    context_id: str
    status: TaskStatus
    metadata: dict[str, Any] | None = None


class TaskArtifactUpdateEvent(_Wire):
    task_id: str
    context_id: str
    artifact: Artifact
    append: bool = False
    last_chunk: bool = False
    metadata: dict[str, Any] | None = None


# --- the agent card ----------------------------------------------------------------------


class AgentInterface(_Wire):
    url: str
    protocol_binding: str  # "JSONRPC" | "GRPC" | "HTTP+JSON" (open form)
    protocol_version: str
    tenant: str = ""


class AgentProvider(_Wire):
    url: str
    organization: str


class AgentExtension(_Wire):
    uri: str = ""
    description: str = ""
    required: bool = False
    params: dict[str, Any] | None = None


class AgentCapabilities(_Wire):
    streaming: bool | None = None
    push_notifications: bool | None = None
    extensions: list[AgentExtension] = []
    extended_agent_card: bool | None = None


class StringList(_Wire):
    # "list" on the wire; a field named ``list`` would shadow the builtin in annotations.
    items: list[str] = msgspec.field(default_factory=list, name="list")


class SecurityRequirement(_Wire):
    """Scheme name -> the scopes it needs (none for a bearer token)."""

    schemes: dict[str, StringList] = {}


class AgentSkill(_Wire):
    id: str
    name: str
    description: str
    tags: list[str]
    examples: list[str] = []
    input_modes: list[str] = []
    output_modes: list[str] = []
    security_requirements: list[SecurityRequirement] = []


class APIKeySecurityScheme(_Wire):
    location: str  # "query" | "header" | "cookie"
    name: str
    description: str = ""


class HTTPAuthSecurityScheme(_Wire):
    scheme: str  # e.g. "Bearer"
    description: str = ""
    bearer_format: str = ""


class OAuth2SecurityScheme(_Wire):
    flows: dict[str, Any]  # kept as sent: Iris only names its own bearer scheme
    description: str = ""
    oauth2_metadata_url: str = ""


class OpenIdConnectSecurityScheme(_Wire):
    open_id_connect_url: str
    description: str = ""


class MutualTlsSecurityScheme(_Wire):
    description: str = ""


class SecurityScheme(_Wire):
    """A oneof: exactly one member set."""

    api_key_security_scheme: APIKeySecurityScheme | None = None
    http_auth_security_scheme: HTTPAuthSecurityScheme | None = None
    oauth2_security_scheme: OAuth2SecurityScheme | None = None
    open_id_connect_security_scheme: OpenIdConnectSecurityScheme | None = None
    mtls_security_scheme: MutualTlsSecurityScheme | None = None


class AgentCardSignature(_Wire):
    protected: str
    signature: str
    header: dict[str, Any] | None = None


class AgentCard(_Wire):
    name: str
    description: str
    supported_interfaces: list[AgentInterface]
    version: str
    capabilities: AgentCapabilities
    default_input_modes: list[str]
    default_output_modes: list[str]
    skills: list[AgentSkill]
    provider: AgentProvider | None = None
    documentation_url: str | None = None
    security_schemes: dict[str, SecurityScheme] = {}
    security_requirements: list[SecurityRequirement] = []
    signatures: list[AgentCardSignature] = []
    icon_url: str | None = None


# --- method params and results --------------------------------------------------------------


class AuthenticationInfo(_Wire):
    scheme: str
    credentials: str = ""


class TaskPushNotificationConfig(_Wire):
    url: str
    tenant: str = ""
    id: str = ""
    task_id: str = ""
    token: str = ""
    authentication: AuthenticationInfo | None = None


# The limits of a request's numbers, on their types: a call out of range is refused where
# its params are read (-32602), with msgspec's words naming the field.
HistoryLength = Annotated[int, msgspec.Meta(ge=0, description="How many messages of the history; 0: none.")]
PageSize = Annotated[int, msgspec.Meta(ge=1, le=100, description="Tasks per page, 1 to 100 (50 when unset).")]


class SendMessageConfiguration(_Wire):
    accepted_output_modes: list[str] = []
    task_push_notification_config: TaskPushNotificationConfig | None = None
    history_length: HistoryLength | None = None
    # False (the default): wait for a terminal or interrupted state before answering.
    return_immediately: bool = False


class SendMessageRequest(_Wire):
    message: Message
    tenant: str = ""
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None


class GetTaskRequest(_Wire):
    id: str
    tenant: str = ""
    history_length: HistoryLength | None = None


class ListTasksRequest(_Wire):
    tenant: str = ""
    context_id: str = ""
    status: TaskState | None = None
    page_size: PageSize | None = None
    page_token: str = ""
    history_length: HistoryLength | None = None
    status_timestamp_after: str | None = None
    include_artifacts: bool | None = None


class ListTasksResponse(_Wire):
    # All required, so all always on the wire (``nextPageToken: ""`` on the last page).
    tasks: list[Task]
    next_page_token: str
    page_size: int
    total_size: int


class CancelTaskRequest(_Wire):
    id: str
    tenant: str = ""
    metadata: dict[str, Any] | None = None


class SubscribeToTaskRequest(_Wire):
    id: str
    tenant: str = ""


class GetExtendedAgentCardRequest(_Wire):
    tenant: str = ""


class SendMessageResponse(_Wire):
    """A oneof: the task the message created or continued, or a direct message."""

    task: Task | None = None
    message: Message | None = None


class StreamResponse(_Wire):
    """One SSE event's result: a oneof of four."""

    task: Task | None = None
    message: Message | None = None
    status_update: TaskStatusUpdateEvent | None = None
    artifact_update: TaskArtifactUpdateEvent | None = None


class IrisChain(_Wire):
    """The relay chain an Iris sends along in ``Message.metadata["iris"]``: the receiving
    Iris checks it against its loop guard and hop limit."""

    chain_id: str
    hops: ChainHops = 0
    path: ChainPath = []


# --- JSON-RPC 2.0 envelopes ----------------------------------------------------------------

JSONRPC_VERSION: Final = "2.0"
RequestId = str | int | None
P = TypeVar("P")
T = TypeVar("T")


class JsonRpcRequest(msgspec.Struct, Generic[P], kw_only=True):
    """A call. The server decodes ``JsonRpcRequest[msgspec.Raw]`` and decodes ``params``
    once the method says what they are. ``id`` is ``UNSET`` in a notification. Every field
    that is set is on the wire (``"jsonrpc": "2.0"`` included)."""

    jsonrpc: str
    method: str
    id: RequestId | UnsetType = UNSET
    params: P | UnsetType = UNSET


class JsonRpcError(msgspec.Struct, kw_only=True):
    code: int
    message: str
    data: Any | UnsetType = UNSET


class JsonRpcResponse(msgspec.Struct, Generic[T], kw_only=True):
    """A reply: exactly one of ``result`` and ``error``. ``id`` and ``jsonrpc`` are always on
    the wire (``id`` is ``null`` when the request's id could not be read)."""

    jsonrpc: str = JSONRPC_VERSION
    id: RequestId
    result: T | UnsetType = UNSET
    error: JsonRpcError | UnsetType = UNSET


# --- error codes (spec 5.4, 9.5) -----------------------------------------------------------

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

TASK_NOT_FOUND: Final = -32001
TASK_NOT_CANCELABLE: Final = -32002
PUSH_NOTIFICATION_NOT_SUPPORTED: Final = -32003
UNSUPPORTED_OPERATION: Final = -32004
CONTENT_TYPE_NOT_SUPPORTED: Final = -32005
INVALID_AGENT_RESPONSE: Final = -32006
EXTENDED_AGENT_CARD_NOT_CONFIGURED: Final = -32007
EXTENSION_SUPPORT_REQUIRED: Final = -32008
VERSION_NOT_SUPPORTED: Final = -32009

# The ErrorInfo ``reason`` of each A2A-specific code (the error's name in UPPER_SNAKE_CASE
# without "Error").
ERROR_REASONS: Final[dict[int, str]] = {
    TASK_NOT_FOUND: "TASK_NOT_FOUND",
    TASK_NOT_CANCELABLE: "TASK_NOT_CANCELABLE",
    PUSH_NOTIFICATION_NOT_SUPPORTED: "PUSH_NOTIFICATION_NOT_SUPPORTED",
    UNSUPPORTED_OPERATION: "UNSUPPORTED_OPERATION",
    CONTENT_TYPE_NOT_SUPPORTED: "CONTENT_TYPE_NOT_SUPPORTED",
    INVALID_AGENT_RESPONSE: "INVALID_AGENT_RESPONSE",
    EXTENDED_AGENT_CARD_NOT_CONFIGURED: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    EXTENSION_SUPPORT_REQUIRED: "EXTENSION_SUPPORT_REQUIRED",
    VERSION_NOT_SUPPORTED: "VERSION_NOT_SUPPORTED",
}
ERROR_INFO_TYPE: Final = "type.googleapis.com/google.rpc.ErrorInfo"
ERROR_DOMAIN: Final = "a2a-protocol.org"


class ErrorInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``google.rpc.ErrorInfo`` as an A2A error's ``data`` carries it (spec 9.5)."""

    type: str = msgspec.field(default=ERROR_INFO_TYPE, name="@type")
    reason: str
    domain: str = ERROR_DOMAIN
    metadata: dict[str, str] = {}


def error(code: int, message: str, **metadata: str) -> JsonRpcError:
    """A JSON-RPC error; an A2A-specific code carries its ErrorInfo in ``data`` as the spec
    requires, with ``metadata`` (e.g. ``taskId=...``) in it."""
    reason = ERROR_REASONS.get(code)
    if reason is None:
        return JsonRpcError(code=code, message=message)
    # The default @type and domain must be on the wire, so encode them explicitly.
    info = {"@type": ERROR_INFO_TYPE, "reason": reason, "domain": ERROR_DOMAIN}
    return JsonRpcError(code=code, message=message, data=[info | ({"metadata": metadata} if metadata else {})])


# --- reusable codecs --------------------------------------------------------------------------

encoder: Final = msgspec.json.Encoder()
request_decoder: Final = msgspec.json.Decoder(JsonRpcRequest[msgspec.Raw])
card_decoder: Final = msgspec.json.Decoder(AgentCard)
