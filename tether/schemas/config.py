"""The config file's shape (`config.toml`): providers, models, defaults, workspace, web, MCP
servers, skills. Wire types only.

Every table forbids unknown keys, so a typo is an error that names the key instead of a setting
silently ignored. Optional model fields are None when unset: a model entry may override only a
few fields of a built-in model and keep the rest.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

import msgspec

from tether.schemas.web import WebConfig

# Thinking strengths the adapters understand ("none" turns thinking off where that exists).
ReasoningLevel = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
REASONING_LEVELS: tuple[str, ...] = get_args(ReasoningLevel)

# Chat completions' output limit: `max_tokens` (what compatible servers read) or
# `max_completion_tokens` (what OpenAI's own API and its reasoning models require).
TokenLimitParam = Literal["max_tokens", "max_completion_tokens"]
# How an Anthropic model's thinking is set: a token budget (Claude 4.5 and earlier) or an
# effort level with adaptive thinking (Claude 4.6 and later refuse budgets).
ThinkingControl = Literal["budget", "effort"]
# Tools the provider runs on its own servers (the model calls them, nothing runs here):
# Anthropic's and OpenAI Responses' web search.
HostedTool = Literal["web_search"]

Seconds = Annotated[float, msgspec.Meta(gt=0)]
Tokens = Annotated[int, msgspec.Meta(ge=1)]
Price = Annotated[float, msgspec.Meta(ge=0)]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
DirAccessMode = Literal["read", "write", "exec"]  # `exec`: commands run there too


class Timeout(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`timeout = { connect = 5, read = 300 }`: connecting should fail fast, a slow model may
    think for minutes between deltas."""

    connect: Seconds | None = None
    read: Seconds | None = None


class ProviderConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    kind: str  # a name in the provider-kind registry; checked when the file is read
    base_url: str | None = None  # None: the kind's public endpoint
    api_key: str | None = None
    api_key_env: str | None = None  # the name of an environment variable holding the key
    timeout: Seconds | Timeout | None = None
    headers: dict[str, str] = {}
    builtin_models: bool = True  # offer the kind's built-in model list too
    # The thinking strength of this provider's models, over [agent]'s and under a model's own.
    default_reasoning: ReasoningLevel | None = None
    provider_tools: list[HostedTool] = []  # hosted tools its models are offered


class ModelConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: str | None = None  # the display name in the editor's model picker
    context_window: Tokens | None = None
    max_output_tokens: Tokens | None = None
    images: bool | None = None
    reasoning: list[ReasoningLevel] | None = None
    default_reasoning: ReasoningLevel | None = None
    input_price: Price | None = None  # per million tokens
    output_price: Price | None = None
    cached_input_price: Price | None = None
    currency: str | None = None
    # Wire details; unset, the adapter decides from the model id and the provider's URL.
    reasons: bool | None = None  # a reasoning model (OpenAI o-series, gpt-5 and later)
    max_tokens_param: TokenLimitParam | None = None  # chat completions only
    thinking: ThinkingControl | None = None  # Anthropic only
    # Another wire API of the same provider for this model (e.g. "openai-responses" on an
    # "openai" provider); None: the provider's kind.
    kind: str | None = None
    provider_tools: list[HostedTool] | None = None  # None: the provider's


class Defaults(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    model: str | None = None  # "provider:model", or "demo"


class WorkspaceConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    # Names no file tool may touch, as globs matched against each part of a path below a root
    # (None: the built-in list; [] turns the denylist off).
    path_denylist: list[str] | None = None
    # Days after which a session's spill files (oversized tool results) are removed.
    spill_days: Annotated[float, msgspec.Meta(gt=0)] | None = None
    # Commands refused in every mode, added to the built-in ones (`program [flags] [words]`).
    command_denylist: list[str] = []
    # False: only `command_denylist` applies (the built-in entries are dropped).
    builtin_command_denylist: bool = True
    # More variables of tether's environment that commands see, beside the built-in allowlist
    # (names, or `PREFIX*`); a provider's key variable is never passed, listed or not.
    command_env: list[str] = []


SandboxMechanism = Literal["auto", "bubblewrap", "landlock", "none"]


class SandboxConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    # What confines commands: auto (bubblewrap, else Landlock; Seatbelt on macOS) or one of
    # them; "none" runs every command unconfined (and so asks for all but read-only ones).
    mechanism: SandboxMechanism = "auto"
    # Whether confined commands may use the network in new sessions (a session option too).
    network: bool = False


class AgentConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[agent]`: what the model is told, how a turn runs its tools, how long it goes on, how
    long a request rides out an outage, and how a new session asks."""

    system_prompt: str | None = None  # replaces tether's persona (tool rules stay)
    append_system_prompt: str | None = None  # added after the persona
    instructions: list[NonEmpty] = []  # more instruction files (relative: from the project root)
    max_rounds: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 32  # then the user is asked
    parallel_tools: bool = True  # a round's independent calls run at once
    max_tool_result_chars: Annotated[int, msgspec.Meta(ge=1_000, le=10_000_000)] = 32_768
    keep_recent_results: Annotated[int, msgspec.Meta(ge=0, le=1_000)] = 12  # never shrunk
    retry_attempts: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10  # per model request
    retry_delays: tuple[Annotated[float, msgspec.Meta(ge=0)], ...] = (5.0, 10.0, 15.0, 20.0)
    retry_step: Annotated[float, msgspec.Meta(ge=0)] = 10.0  # each later wait grows by this
    retry_max_wait: Seconds = 120.0  # cap on one wait, a server's Retry-After included
    retry_max_total: Seconds | None = None  # no wait past this many seconds of retrying
    default_mode: Literal["ask", "code", "read-only"] = "ask"  # of a new session
    default_approvals: Literal["round", "call"] = "round"  # one request per round, or per call
    always_scope: Literal["session", "project"] = "session"  # what an "always" answer covers
    # Every model's thinking strength, under a provider's and a model's own (clamped to what
    # each model has).
    default_reasoning: ReasoningLevel | None = None
    # --- what the system prompt carries, what compaction asks, what is open without asking --
    tool_directives: str | None = None  # replaces tether's tool rules; "" leaves them out
    mcp_instructions: bool = True  # MCP servers' own usage guidance goes into the prompt
    compact_system_prompt: str | None = None  # the instructions the compaction summary follows
    allow_paths: dict[NonEmpty, DirAccessMode] = {}  # directories open without asking
    # --- limits raised without asking, and the PTY limits the user is asked to raise --------
    auto_continue_limits: bool = False  # past max_rounds / the PTY limits, nobody asked
    max_ptys: Annotated[int, msgspec.Meta(ge=1, le=256)] = 8  # open at once, per session
    pty_output_budget: Annotated[int, msgspec.Meta(ge=1024, le=1 << 34)] = 8 * 1024 * 1024
    # How a turn that ends with a todo stack it never touched is reminded of it.
    todo_nag_strategy: Literal["developer", "user", "synthetic_tool", "none"] = "developer"


class SkillsConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[skills]`: more directories of Agent Skills, after the project's, the user's and
    tether's own (`~` expanded; a relative path is taken from the project directory);
    `enabled = false` turns skills off (no skill tools, no catalog, no skill commands);
    `allow_write` lets changes inside a skill run without asking."""

    paths: list[NonEmpty] = []
    enabled: bool = True
    allow_write: bool = False


class TrashConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[trash]`: whether `delete_path` moves to the system trash (the default) or deletes for
    good, as if every call said `permanent`."""

    enabled: bool = True


class McpServerConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[mcp_servers.NAME]`: a command to run (stdio) or a URL (streamable HTTP), exactly one
    of them (checked when the file is read). Strings may name `${VAR}` of tether's
    environment."""

    command: NonEmpty | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    url: NonEmpty | None = None
    headers: dict[str, str] = {}
    read_only: bool = False  # every tool runs without asking (the user vouches for it)
    enabled: bool = True
    timeout: Seconds | None = None  # one request's budget (a tool call, a prompt); None: 120 s


class ConfigFile(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    providers: dict[str, ProviderConfig] = {}
    models: dict[str, ModelConfig] = {}  # keyed "provider:model"
    defaults: Defaults = msgspec.field(default_factory=Defaults)
    workspace: WorkspaceConfig = msgspec.field(default_factory=WorkspaceConfig)
    web: WebConfig = msgspec.field(default_factory=WebConfig)
    mcp_servers: dict[str, McpServerConfig] = {}
    sandbox: SandboxConfig = msgspec.field(default_factory=SandboxConfig)
    agent: AgentConfig = msgspec.field(default_factory=AgentConfig)
    skills: SkillsConfig = msgspec.field(default_factory=SkillsConfig)
    trash: TrashConfig = msgspec.field(default_factory=TrashConfig)
