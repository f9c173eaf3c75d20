"""ACP v1 wire types (schema 1.25.0, stable surface), as msgspec Structs.

camelCase on the wire, snake_case here; tagged unions on `type` / `sessionUpdate` / `outcome`;
unknown fields ignored; `_meta` passed through. Untagged unions (MCP server configs, embedded
resource contents) are kept raw or wide and checked by hand.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType, field

Meta = dict[str, Any] | None | UnsetType


class Base(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True, gc=False):
    meta: Meta = field(default=UNSET, name="_meta")


class Empty(Base):
    pass


# --- content ------------------------------------------------------------------------------


class Annotations(Base):
    audience: list[str] | UnsetType | None = UNSET
    last_modified: str | UnsetType | None = UNSET
    priority: float | UnsetType | None = UNSET


class TextContent(Base, tag_field="type", tag="text"):
    text: str
    annotations: Annotations | UnsetType | None = UNSET


class ImageContent(Base, tag_field="type", tag="image"):
    data: str
    mime_type: str
    uri: str | UnsetType | None = UNSET
    annotations: Annotations | UnsetType | None = UNSET


class AudioContent(Base, tag_field="type", tag="audio"):
    data: str
    mime_type: str
    annotations: Annotations | UnsetType | None = UNSET


class ResourceLink(Base, tag_field="type", tag="resource_link"):
    uri: str
    name: str
    mime_type: str | UnsetType | None = UNSET
    title: str | UnsetType | None = UNSET
    description: str | UnsetType | None = UNSET
    size: int | UnsetType | None = UNSET
    annotations: Annotations | UnsetType | None = UNSET


class ResourceContents(Base):
    """Text or blob resource contents (an untagged union on the wire: one of text/blob is set)."""

    uri: str
    mime_type: str | UnsetType | None = UNSET
    text: str | UnsetType = UNSET
    blob: str | UnsetType = UNSET


class EmbeddedResource(Base, tag_field="type", tag="resource"):
    resource: ResourceContents
    annotations: Annotations | UnsetType | None = UNSET


ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource


# --- initialize ---------------------------------------------------------------------------


class Implementation(Base):
    name: str
    version: str
    title: str | UnsetType | None = UNSET


class FileSystemCapabilities(Base):
    read_text_file: bool = False
    write_text_file: bool = False


class ElicitationCapabilities(Base):
    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None


class ClientSessionCapabilities(Base):
    config_options: dict[str, Any] | None = None
    notices: dict[str, Any] | None = None
    compaction: dict[str, Any] | None = None


class ClientCapabilities(Base):
    fs: FileSystemCapabilities = msgspec.field(default_factory=FileSystemCapabilities)
    terminal: bool = False
    elicitation: ElicitationCapabilities | None = None
    session: ClientSessionCapabilities | None = None


class InitializeRequest(Base):
    protocol_version: Annotated[int, msgspec.Meta(ge=0, le=65535)]  # uint16 in the schema
    client_capabilities: ClientCapabilities = msgspec.field(default_factory=ClientCapabilities)
    client_info: Implementation | UnsetType | None = UNSET


class PromptCapabilities(Base):
    image: bool = False
    audio: bool = False
    embedded_context: bool = False


class McpCapabilities(Base):
    http: bool = False
    sse: bool = False


class SessionCapabilities(Base):
    list: dict[str, Any] | UnsetType = UNSET
    close: dict[str, Any] | UnsetType = UNSET
    resume: dict[str, Any] | UnsetType = UNSET
    delete: dict[str, Any] | UnsetType = UNSET


class AgentCapabilities(Base):
    load_session: bool = False
    prompt_capabilities: PromptCapabilities = msgspec.field(default_factory=PromptCapabilities)
    mcp_capabilities: McpCapabilities = msgspec.field(default_factory=McpCapabilities)
    session_capabilities: SessionCapabilities = msgspec.field(default_factory=SessionCapabilities)


class InitializeResponse(Base):
    protocol_version: int
    agent_capabilities: AgentCapabilities
    auth_methods: list[dict[str, Any]]
    agent_info: Implementation | UnsetType = UNSET


# --- sessions -----------------------------------------------------------------------------


class SessionMode(Base):
    id: str
    name: str
    description: str | UnsetType | None = UNSET


class SessionModeState(Base):
    current_mode_id: str
    available_modes: list[SessionMode]


class SelectOption(Base):
    value: str
    name: str
    description: str | UnsetType | None = UNSET


class SelectConfigOption(Base, tag_field="type", tag="select"):
    id: str
    name: str
    current_value: str
    options: list[SelectOption]
    description: str | UnsetType | None = UNSET
    category: str | UnsetType | None = UNSET


class EnvVariable(Base):
    name: str
    value: str


class HttpHeader(Base):
    name: str
    value: str


class McpServerStdio(Base):
    """The stdio server every agent must support (the schema gives it no `type`)."""

    name: str
    command: str
    args: list[str]
    env: list[EnvVariable]


class McpServerHttp(Base):
    type: Literal["http", "sse"]
    name: str
    url: str
    headers: list[HttpHeader]


class NewSessionRequest(Base):
    cwd: str
    mcp_servers: list[dict[str, Any]]
    additional_directories: list[str] | UnsetType | None = UNSET


class NewSessionResponse(Base):
    session_id: str
    modes: SessionModeState | UnsetType = UNSET
    config_options: list[SelectConfigOption] | UnsetType = UNSET


class LoadSessionRequest(Base):
    session_id: str
    cwd: str
    mcp_servers: list[dict[str, Any]]
    additional_directories: list[str] | UnsetType | None = UNSET


class LoadSessionResponse(Base):
    modes: SessionModeState | UnsetType = UNSET
    config_options: list[SelectConfigOption] | UnsetType = UNSET


class ResumeSessionRequest(Base):
    session_id: str
    cwd: str
    mcp_servers: list[dict[str, Any]] | UnsetType | None = UNSET
    additional_directories: list[str] | UnsetType | None = UNSET


class ResumeSessionResponse(LoadSessionResponse):
    pass


class SessionIdParams(Base):
    """Params of every request that names only a session (close, cancel)."""

    session_id: str


class PromptRequest(Base):
    session_id: str
    prompt: list[ContentBlock]


StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


class PromptResponse(Base):
    stop_reason: StopReason


class ListSessionsRequest(Base):
    cwd: str | UnsetType | None = UNSET
    cursor: str | UnsetType | None = UNSET


class SessionInfo(Base):
    session_id: str
    cwd: str
    title: str | UnsetType | None = UNSET
    updated_at: str | UnsetType | None = UNSET


class ListSessionsResponse(Base):
    sessions: list[SessionInfo]
    next_cursor: str | UnsetType = UNSET


class SetModeRequest(Base):
    session_id: str
    mode_id: str


class SetConfigOptionRequest(Base):
    session_id: str
    config_id: str
    value: str | bool
    type: str | UnsetType = UNSET


class SetConfigOptionResponse(Base):
    config_options: list[SelectConfigOption]


# --- tool calls ---------------------------------------------------------------------------

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]


class ToolCallLocation(Base):
    path: str
    line: int | UnsetType | None = UNSET


class ContentToolContent(Base, tag_field="type", tag="content"):
    content: ContentBlock


class DiffToolContent(Base, tag_field="type", tag="diff"):
    path: str
    new_text: str
    old_text: str | UnsetType | None = UNSET


class TerminalToolContent(Base, tag_field="type", tag="terminal"):
    terminal_id: str


ToolCallContent = ContentToolContent | DiffToolContent | TerminalToolContent


class ToolCallFields(Base):
    """The fields of a ToolCallUpdate (inside permission requests): all optional but the id."""

    tool_call_id: str
    title: str | UnsetType | None = UNSET
    kind: ToolKind | UnsetType | None = UNSET
    status: ToolCallStatus | UnsetType | None = UNSET
    content: list[ToolCallContent] | UnsetType | None = UNSET
    locations: list[ToolCallLocation] | UnsetType | None = UNSET
    raw_input: Any = UNSET
    raw_output: Any = UNSET


# --- session/update -----------------------------------------------------------------------


class ContentChunk(Base):
    content: ContentBlock
    message_id: str | UnsetType | None = UNSET


class UserMessageChunk(ContentChunk, tag_field="sessionUpdate", tag="user_message_chunk"):
    pass


class AgentMessageChunk(ContentChunk, tag_field="sessionUpdate", tag="agent_message_chunk"):
    pass


class AgentThoughtChunk(ContentChunk, tag_field="sessionUpdate", tag="agent_thought_chunk"):
    pass


class ToolCallStart(Base, tag_field="sessionUpdate", tag="tool_call"):
    tool_call_id: str
    title: str
    kind: ToolKind | UnsetType = UNSET
    status: ToolCallStatus | UnsetType = UNSET
    content: list[ToolCallContent] | UnsetType = UNSET
    locations: list[ToolCallLocation] | UnsetType = UNSET
    raw_input: Any = UNSET
    raw_output: Any = UNSET
    name: str | UnsetType | None = UNSET


class ToolCallProgress(ToolCallFields, tag_field="sessionUpdate", tag="tool_call_update"):
    pass


class PlanEntry(Base):
    content: str
    priority: Literal["high", "medium", "low"]
    status: Literal["pending", "in_progress", "completed"]


class PlanUpdate(Base, tag_field="sessionUpdate", tag="plan"):
    entries: list[PlanEntry]


class CommandInput(Base):
    hint: str


class AvailableCommand(Base):
    name: str
    description: str
    input: CommandInput | UnsetType | None = UNSET


class AvailableCommandsUpdate(Base, tag_field="sessionUpdate", tag="available_commands_update"):
    available_commands: list[AvailableCommand]


class CurrentModeUpdate(Base, tag_field="sessionUpdate", tag="current_mode_update"):
    current_mode_id: str


class ConfigOptionUpdate(Base, tag_field="sessionUpdate", tag="config_option_update"):
    config_options: list[SelectConfigOption]


class SessionInfoUpdate(Base, tag_field="sessionUpdate", tag="session_info_update"):
    title: str | UnsetType | None = UNSET
    updated_at: str | UnsetType | None = UNSET


class Cost(Base):
    amount: float
    currency: str


class UsageUpdate(Base, tag_field="sessionUpdate", tag="usage_update"):
    used: int
    size: int
    cost: Cost | UnsetType | None = UNSET


class NoticeUpdate(Base, tag_field="sessionUpdate", tag="notice"):
    severity: str
    title: str
    description: str | UnsetType | None = UNSET


SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | PlanUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
    | NoticeUpdate
)


class SessionNotification(Base):
    session_id: str
    update: SessionUpdate


# --- agent -> client requests -------------------------------------------------------------

PermissionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


class PermissionOption(Base):
    option_id: str
    name: str
    kind: PermissionKind


class RequestPermissionRequest(Base):
    session_id: str
    tool_call: ToolCallFields
    options: list[PermissionOption]


class SelectedOutcome(Base, tag_field="outcome", tag="selected"):
    option_id: str


class CancelledOutcome(Base, tag_field="outcome", tag="cancelled"):
    pass


class RequestPermissionResponse(Base):
    outcome: SelectedOutcome | CancelledOutcome


class ReadTextFileRequest(Base):
    session_id: str
    path: str
    line: int | UnsetType | None = UNSET
    limit: int | UnsetType | None = UNSET


class ReadTextFileResponse(Base):
    content: str


class WriteTextFileRequest(Base):
    session_id: str
    path: str
    content: str


class CreateTerminalRequest(Base):
    session_id: str
    command: str
    args: list[str] = field(default_factory=list[str])
    env: list[EnvVariable] = field(default_factory=list[EnvVariable])
    cwd: str | UnsetType | None = UNSET
    output_byte_limit: int | UnsetType | None = UNSET


class CreateTerminalResponse(Base):
    terminal_id: str


class TerminalRequest(Base):
    """The params of terminal/output, wait_for_exit, kill and release."""

    session_id: str
    terminal_id: str


class TerminalExitStatus(Base):
    exit_code: int | None = None
    signal: str | None = None


class WaitForTerminalExitResponse(TerminalExitStatus):
    pass


class TerminalOutputResponse(Base):
    output: str
    truncated: bool = False
    exit_status: TerminalExitStatus | None = None


class BooleanProperty(Base):
    type: Literal["boolean"]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: bool | UnsetType = UNSET


class EnumOption(Base):
    const: str
    title: str


class StringProperty(Base):
    """A text field; with `one_of` a single choice."""

    type: Literal["string"]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    one_of: list[EnumOption] | UnsetType = field(default=UNSET, name="oneOf")


class NumberProperty(Base):
    type: Literal["number", "integer"]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET


ElicitationProperty = BooleanProperty | StringProperty | NumberProperty


class ElicitationSchema(Base):
    type: Literal["object"]
    title: str | UnsetType = UNSET
    properties: dict[str, ElicitationProperty] = {}
    required: list[str] | UnsetType = UNSET


class CreateFormElicitationRequest(Base):
    session_id: str
    message: str
    requested_schema: ElicitationSchema
    mode: Literal["form"]
    tool_call_id: str | UnsetType = UNSET


class CreateElicitationResponse(Base):
    action: str
    content: dict[str, Any] | UnsetType | None = UNSET
