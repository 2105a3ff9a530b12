"""The A2A wire types against the JSON examples of the A2A 1.0 specification."""

from __future__ import annotations

import msgspec
import pytest

from protocol import a2a

# Section 8.5, the sample agent card (its v0.x "security" and "stateTransitionHistory"
# are not 1.0 fields: ignored, as the spec asks of unknown fields).
SAMPLE_CARD = b"""{
  "name": "GeoSpatial Route Planner Agent",
  "description": "Provides advanced route planning.",
  "supportedInterfaces": [
    {"url": "https://georoute-agent.example.com/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
    {"url": "https://georoute-agent.example.com/a2a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
    {"url": "https://georoute-agent.example.com/a2a/json", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
  ],
  "provider": {"organization": "Example Geo Services Inc.", "url": "https://www.examplegeoservices.com"},
  "iconUrl": "https://georoute-agent.example.com/icon.png",
  "version": "1.2.0",
  "documentationUrl": "https://docs.examplegeoservices.com/georoute-agent/api",
  "capabilities": {"streaming": true, "pushNotifications": true, "stateTransitionHistory": false,
                   "extendedAgentCard": true},
  "securitySchemes": {
    "google": {"openIdConnectSecurityScheme": {
      "openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"}}
  },
  "security": [{ "google": ["openid", "profile", "email"] }],
  "defaultInputModes": ["application/json", "text/plain"],
  "defaultOutputModes": ["application/json", "image/png"],
  "skills": [
    {
      "id": "route-optimizer-traffic",
      "name": "Traffic-Aware Route Optimizer",
      "description": "Calculates the optimal driving route.",
      "tags": ["maps", "routing"],
      "examples": ["Plan a route avoiding tolls."],
      "inputModes": ["application/json", "text/plain"],
      "outputModes": ["application/json", "application/vnd.geo+json", "text/html"]
    }
  ],
  "signatures": [{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "QFdkNLNszlGj3z3u0YQGt"}]
}"""


def test_the_sample_agent_card_decodes() -> None:
    card = a2a.card_decoder.decode(SAMPLE_CARD)
    assert [i.protocol_binding for i in card.supported_interfaces] == ["JSONRPC", "GRPC", "HTTP+JSON"]
    assert card.capabilities.streaming is True and card.capabilities.extended_agent_card is True
    oidc = card.security_schemes["google"].open_id_connect_security_scheme
    assert oidc is not None and oidc.open_id_connect_url.startswith("https://accounts.google.com")
    assert card.skills[0].output_modes[1] == "application/vnd.geo+json"
    assert card.provider is not None and card.provider.organization == "Example Geo Services Inc."
    assert card.signatures[0].protected == "eyJhbGciOiJFUzI1NiJ9"


def test_a_card_encodes_camel_case_and_leaves_defaults_out() -> None:
    card = a2a.AgentCard(
        name="backend",
        description="the backend team",
        supported_interfaces=[
            a2a.AgentInterface(url="http://127.0.0.1:1/a2a/backend", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        version="1.0.0",
        capabilities=a2a.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[],
        security_schemes={
            "bearer": a2a.SecurityScheme(http_auth_security_scheme=a2a.HTTPAuthSecurityScheme(scheme="Bearer"))
        },
        security_requirements=[a2a.SecurityRequirement(schemes={"bearer": a2a.StringList()})],
    )
    wire = msgspec.json.decode(a2a.encoder.encode(card))
    assert wire["supportedInterfaces"] == [
        {"url": "http://127.0.0.1:1/a2a/backend", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    assert wire["capabilities"] == {"streaming": True}
    assert wire["securitySchemes"] == {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
    assert wire["securityRequirements"] == [{"schemes": {"bearer": {}}}]
    assert "provider" not in wire and "iconUrl" not in wire
    assert a2a.card_decoder.decode(a2a.encoder.encode(card)) == card


def test_a_completed_task_from_section_6_1_decodes() -> None:
    body = b"""{"task": {"id": "task-uuid", "contextId": "context-uuid",
      "status": {"state": "TASK_STATE_COMPLETED"},
      "artifacts": [{"artifactId": "artifact-uuid", "name": "Weather Report",
                     "parts": [{"text": "Today will be sunny with a high of 75\xc2\xb0F"}]}]}}"""
    reply = msgspec.json.decode(body, type=a2a.SendMessageResponse)
    assert reply.message is None and reply.task is not None
    assert reply.task.status.state is a2a.TaskState.COMPLETED
    assert reply.task.artifacts != msgspec.UNSET
    assert reply.task.artifacts[0].parts[0].text == "Today will be sunny with a high of 75\u00b0F"


def test_a_listing_from_section_6_5_decodes_and_keeps_its_empty_page_token() -> None:
    body = b"""{"tasks": [{"id": "789abc", "contextId": "another-context-id",
        "status": {"state": "TASK_STATE_WORKING",
          "message": {"role": "ROLE_AGENT", "parts": [{"text": "Processing your document analysis..."}],
                      "messageId": "msg-status-update"},
          "timestamp": "2024-03-15T10:20:00Z"}}],
      "totalSize": 1, "pageSize": 20, "nextPageToken": ""}"""
    listing = msgspec.json.decode(body, type=a2a.ListTasksResponse)
    task = listing.tasks[0]
    assert task.status.message is not None and task.status.message.role is a2a.Role.AGENT
    assert task.artifacts is msgspec.UNSET and task.history is msgspec.UNSET
    wire = msgspec.json.decode(a2a.encoder.encode(listing))
    assert wire["nextPageToken"] == "" and "artifacts" not in wire["tasks"][0]


def test_a_task_asked_with_artifacts_keeps_an_empty_list() -> None:
    task = a2a.Task(id="t", status=a2a.TaskStatus(state=a2a.TaskState.WORKING), artifacts=[])
    assert msgspec.json.decode(a2a.encoder.encode(task))["artifacts"] == []


def test_file_and_data_parts_from_sections_6_7_and_6_8_decode() -> None:
    file_part = msgspec.json.decode(
        b'{"url": "https://storage.example.com/out.png", "filename": "output.png", "mediaType": "image/png"}',
        type=a2a.Part,
    )
    assert file_part.url and file_part.media_type == "image/png" and file_part.text is None
    raw = msgspec.json.decode(b'{"raw": "iVBORw0K", "filename": "in.png"}', type=a2a.Part)
    assert raw.raw == b"\x89PNG\r\n"
    data = msgspec.json.decode(b'{"data": {"ticketNumber": "REQ12312"}}', type=a2a.Part)
    assert data.data == {"ticketNumber": "REQ12312"}
    # JSON null is a value a data part may carry: it is kept, and sent back.
    null = msgspec.json.decode(b'{"data": null}', type=a2a.Part)
    assert null.data is None and a2a.encoder.encode(null) == b'{"data":null}'
    assert a2a.encoder.encode(a2a.Part(text="hi")) == b'{"text":"hi"}'


def test_a_send_message_call_decodes_with_its_configuration() -> None:
    body = b"""{"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
      "params": {"message": {"role": "ROLE_USER", "parts": [{"text": "Hello"}], "messageId": "msg-1",
                             "contextId": "ctx",
                             "metadata": {"iris": {"chainId": "c1", "hops": 2, "path": ["a", "b"]}}},
                 "configuration": {"returnImmediately": true, "historyLength": 0,
                                   "acceptedOutputModes": ["text/plain"]}}}"""
    call = a2a.request_decoder.decode(body)
    assert call.method == "SendMessage" and call.id == 1
    assert isinstance(call.params, msgspec.Raw)
    params = msgspec.json.decode(call.params, type=a2a.SendMessageRequest)
    assert params.message.role is a2a.Role.USER and params.message.context_id == "ctx"
    assert params.configuration is not None and params.configuration.return_immediately
    assert params.configuration.history_length == 0
    assert params.message.metadata is not None
    chain = msgspec.convert(params.message.metadata[a2a.IRIS_METADATA_KEY], a2a.IrisChain)
    assert chain == a2a.IrisChain(chain_id="c1", hops=2, path=["a", "b"])


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (
            b'{"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "task-uuid", "historyLength": 10}}',
            a2a.GetTaskRequest,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {"contextId": "context-uuid",'
            b' "status": "TASK_STATE_WORKING", "pageSize": 50, "pageToken": "cursor-token"}}',
            a2a.ListTasksRequest,
        ),
        (b'{"jsonrpc": "2.0", "id": 4, "method": "CancelTask", "params": {"id": "task-uuid"}}', a2a.CancelTaskRequest),
        (
            b'{"jsonrpc": "2.0", "id": 5, "method": "SubscribeToTask", "params": {"id": "task-uuid"}}',
            a2a.SubscribeToTaskRequest,
        ),
    ],
)
def test_the_section_9_calls_decode(body: bytes, kind: type[msgspec.Struct]) -> None:
    call = a2a.request_decoder.decode(body)
    assert isinstance(call.params, msgspec.Raw)
    params = msgspec.json.decode(call.params, type=kind)
    assert isinstance(params, kind)


def test_list_tasks_with_a_status_filter_decodes_the_enum() -> None:
    params = msgspec.json.decode(b'{"status": "TASK_STATE_WORKING", "pageSize": 50}', type=a2a.ListTasksRequest)
    assert params.status is a2a.TaskState.WORKING and params.page_size == 50
    with pytest.raises(msgspec.ValidationError, match="status"):
        msgspec.json.decode(b'{"status": "TASK_STATE_RUNNING"}', type=a2a.ListTasksRequest)


def test_a_call_without_params_or_jsonrpc() -> None:
    call = a2a.request_decoder.decode(b'{"jsonrpc": "2.0", "id": 6, "method": "GetExtendedAgentCard"}')
    assert call.params is msgspec.UNSET
    with pytest.raises(msgspec.ValidationError, match="jsonrpc"):
        a2a.request_decoder.decode(b'{"id": 6, "method": "GetTask"}')


def test_the_task_not_found_error_of_section_9_5() -> None:
    reply = a2a.JsonRpcResponse[a2a.Task](
        id=2, error=a2a.error(a2a.TASK_NOT_FOUND, "Task not found", taskId="nonexistent-task-id")
    )
    assert msgspec.json.decode(a2a.encoder.encode(reply)) == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {
            "code": -32001,
            "message": "Task not found",
            "data": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND",
                    "domain": "a2a-protocol.org",
                    "metadata": {"taskId": "nonexistent-task-id"},
                }
            ],
        },
    }
    decoded = msgspec.json.decode(a2a.encoder.encode(reply), type=a2a.JsonRpcResponse[a2a.Task])
    assert not isinstance(decoded.error, msgspec.UnsetType) and decoded.error.code == a2a.TASK_NOT_FOUND
    assert isinstance(decoded.error.data, list)
    info = msgspec.convert(decoded.error.data[0], a2a.ErrorInfo)
    assert info.reason == "TASK_NOT_FOUND" and info.domain == a2a.ERROR_DOMAIN


def test_a_standard_json_rpc_error_has_no_error_info() -> None:
    wire = msgspec.json.decode(
        a2a.encoder.encode(
            a2a.JsonRpcResponse[None](id=None, error=a2a.error(a2a.METHOD_NOT_FOUND, "Method not found"))
        )
    )
    assert wire == {"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": "Method not found"}}


def test_stream_events_decode_each_member_of_the_oneof() -> None:
    status = msgspec.json.decode(
        b'{"statusUpdate": {"taskId": "t", "contextId": "c",'
        b' "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2024-03-15T18:30:00Z"}}}',
        type=a2a.StreamResponse,
    )
    assert status.status_update is not None and status.status_update.status.state is a2a.TaskState.COMPLETED
    artifact = msgspec.json.decode(
        b'{"artifactUpdate": {"taskId": "t", "contextId": "c", "lastChunk": true,'
        b' "artifact": {"artifactId": "a", "parts": [{"text": "# Report"}]}}}',
        type=a2a.StreamResponse,
    )
    assert artifact.artifact_update is not None and artifact.artifact_update.last_chunk
    assert artifact.task is None and artifact.message is None and artifact.status_update is None


def test_terminal_and_interrupted_states() -> None:
    assert a2a.TaskState.CANCELED in a2a.TERMINAL_STATES
    assert a2a.TaskState.INPUT_REQUIRED in a2a.INTERRUPTED_STATES
    assert a2a.TaskState.WORKING not in a2a.TERMINAL_STATES | a2a.INTERRUPTED_STATES
