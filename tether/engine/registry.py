"""Tools as the engine knows them: `@tool` turns an async function taking its arguments as one
`ToolArgs` Struct into a ToolDef whose JSON schema is inferred from that Struct's fields and
whose descriptions come from the function's docstring; the hooks that plan and describe a call
receive the same Struct, typed. `schema_tool` makes one from a JSON schema someone else wrote
(an MCP server's tool), whose arguments are one dict."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar, cast

import msgspec

from tether.engine import json_schema
from tether.engine.events import Location, PlanItem, TextOut, ToolContent
from tether.engine.history import ImagePart
from tether.engine.providers.base import ToolSpec
from tether.engine.seam import Capabilities
from tether.errors import ToolError

DEFAULT_TIMEOUT = 120.0


class ToolOutput(msgspec.Struct):
    """What a tool returns: text for the model, content for the user's tool card."""

    text: str
    content: list[ToolContent] = msgspec.field(default_factory=list[ToolContent])
    raw_output: Any = None
    plan: list[PlanItem] | None = None  # the session's new plan, when the tool maintains it
    images: list[ImagePart] = msgspec.field(default_factory=list[ImagePart])  # for the model only
    # A failure told in the tool's own words (a seed's exact `Error: ...` text): the result is
    # an error for the model and the card fails, but the text is kept as it is.
    is_error: bool = False


class CallPlan(msgspec.Struct):
    """How a call presents itself before it runs: its card, whether it needs the user's consent,
    what an "always" answer would cover, and which files it writes (for per-file locks)."""

    title: str
    kind: str = "other"
    locations: list[Location] = msgspec.field(default_factory=list[Location])
    content: list[ToolContent] = msgspec.field(default_factory=list[ToolContent])
    confirm: bool = False
    scope: str = ""
    writes: list[str] = msgspec.field(default_factory=list[str])
    target: str = ""  # the call's short object (a path, a command line) for round titles
    # The call would ask, but the session's mode lets it run (`code` mode creating a file): its
    # result then says `[approval] mode (code)`.
    waived_by_mode: bool = False
    # How the card names what "always" covers (default: the tool and its scope); a call that
    # is not `grantable` asks every time, whatever was answered before.
    grant_label: str = ""
    grantable: bool = True
    # The user is asked every time, in every mode, never covered by a grant (a change to a
    # skill: set by the pipeline when the call writes in a guarded directory).
    always_ask: bool = False
    # The user answers it in every mode (allow-all waives nothing), though their own "always"
    # answer still covers it: a fetch from a loopback or private-network address.
    asks_in_every_mode: bool = False
    # The skill directories a change to skills lies in (set by the pipeline): an answer "for
    # this session", or `[skills] allow_write`, lets it run unasked.
    skill_dirs: list[str] = msgspec.field(default_factory=list[str])


class ToolArgs(msgspec.Struct, forbid_unknown_fields=True):
    """A `@tool` tool's arguments: subclass it with one field per argument, described in the
    tool's docstring under `Args:` (a subclass's own docstring would reach the model as its
    schema's description). Unknown arguments are refused."""


A = TypeVar("A")  # a call's decoded arguments: its tool's ToolArgs, or a dict (`schema_tool`)
S = TypeVar("S", bound=ToolArgs)
Args = Any  # any tool's arguments, as the pipeline holds them

ToolFn = Callable[[Capabilities, A], Awaitable[ToolOutput | str]]
Planner = Callable[[Capabilities, A, str], Awaitable[CallPlan]]
# How a call looks before anything is checked (no I/O, may raise): the card a call keeps when
# its plan refuses it (FILE_EXISTS, OUTSIDE_ROOTS, ...).
Describer = Callable[[Capabilities, A], CallPlan]


class ToolDef(msgspec.Struct, Generic[A]):
    name: str
    description: str
    parameters: dict[str, Any]
    # None: the arguments are a JSON object, checked against `parameters` by `check`, and `fn`
    # takes them as one dict.
    args_type: type[A] | None
    fn: ToolFn[A]
    kind: str = "other"
    read_only: bool = False
    timeout: float = DEFAULT_TIMEOUT
    timeout_key: str = ""  # the config key that sets `timeout`, named when a call outlives it
    spill: bool = True  # oversized results go to a spill file (reads opt out: they page instead)
    planner: Planner[A] | None = None
    describer: Describer[A] | None = None
    title: str = ""  # the call's card title when no describer names it (default: the name)
    check: json_schema.Checker | None = None
    # For a schema reshaped to suit every provider (renamed keys): the arguments back as the
    # tool's own schema names them, before they are checked.
    unmap: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # How the call's result reads when the turn is cancelled while it runs, given the seconds
    # it ran (a wait: "cancelled by the user after 2.1 s"); None: "the turn was cancelled".
    aborted: Callable[[float], str] | None = None
    # For a tool that changes things only in some calls (fetch_local: a GET only reads): None
    # when this call only reads, else why read-only mode refuses it.
    read_only_calls: Callable[[A], str | None] | None = None

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def decode(self, arguments: str | bytes) -> A:
        """Parse and validate the model's arguments; raises ToolError(INVALID_ARGS)."""
        try:
            if self.args_type is None:
                return cast(A, self._decode_object(arguments))
            return msgspec.json.decode(arguments or "{}", type=self.args_type)
        except msgspec.ValidationError as exc:
            raise ToolError("INVALID_ARGS", _args_message(str(exc))) from None
        except msgspec.DecodeError as exc:
            raise ToolError("INVALID_ARGS", f"arguments are not valid JSON: {exc}") from None

    def _decode_object(self, arguments: str | bytes) -> dict[str, Any]:
        args = msgspec.json.decode(arguments or "{}")
        if not isinstance(args, dict):
            raise ToolError("INVALID_ARGS", "arguments must be a JSON object")
        if self.unmap is not None:
            args = self.unmap(args)
        problems = self.check(args) if self.check is not None else []
        if problems:
            raise ToolError("INVALID_ARGS", "; ".join(problems))
        return args

    def read_only_refusal(self, args: A) -> str | None:
        """Why read-only mode (and /btw) refuses this call; None when it only reads."""
        if self.read_only:
            return None
        if self.read_only_calls is not None:
            return self.read_only_calls(args)
        return (
            f"{self.name} changes things and the session is in read-only mode; "
            "say what you would do, or ask the user to switch to `ask` or `code` "
            "mode (`/mode ask`, or the editor's mode menu)"
        )

    async def plan(self, ctx: Capabilities, args: A, mode: str) -> CallPlan:
        if self.planner is not None:
            return await self.planner(ctx, args, mode)
        plan = self.describe(ctx, args)
        plan.confirm, plan.scope = not self.read_only, self.name
        return plan

    def describe(self, ctx: Capabilities, args: A | None) -> CallPlan:
        """The call's card without checks; never raises (falls back to the tool's name)."""
        if self.describer is not None and args is not None:
            try:
                return self.describer(ctx, args)
            except Exception:  # a describer sees unchecked arguments: any failure is tolerated
                pass
        return CallPlan(title=self.title or self.name, kind=self.kind)

    async def invoke(self, ctx: Capabilities, args: A) -> ToolOutput:
        out = await self.fn(ctx, args)
        return ToolOutput(out, [TextOut(out)]) if isinstance(out, str) else out

    def planned_by(self, planner: Planner[A]) -> Planner[A]:
        """Decorator: attach the function that builds this tool's CallPlan."""
        self.planner = planner
        return planner

    def described_by(self, describer: Describer[A]) -> Describer[A]:
        """Decorator: attach the function that names a call before it is checked."""
        self.describer = describer
        return describer


def _args_message(text: str) -> str:
    # msgspec says "at `$.path`"; the model knows its arguments by name, not JSON path.
    return re.sub(r"`\$\.([A-Za-z_][\w]*)`", r"`\1`", text).replace(
        "Object missing required field", "missing required argument"
    )


def tool(
    *,
    kind: str = "other",
    read_only: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    spill: bool = True,
    name: str | None = None,
    timeout_key: str = "",
    aborted: Callable[[float], str] | None = None,
) -> Callable[[ToolFn[S]], ToolDef[S]]:
    """Make a ToolDef from `async def f(ctx, args: FArgs) -> ToolOutput | str`, `FArgs` a
    ToolArgs Struct, with a docstring whose first paragraph describes the tool and whose
    `Args:` section describes each of FArgs' fields."""

    def wrap(fn: ToolFn[S]) -> ToolDef[S]:
        summary, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
        args_type: type[S] = _args_type(fn)
        return ToolDef(
            name=name or fn.__name__,
            description=summary,
            parameters=_json_schema(args_type, arg_docs),
            args_type=args_type,
            fn=fn,
            kind=kind,
            read_only=read_only,
            timeout=timeout,
            timeout_key=timeout_key,
            spill=spill,
            aborted=aborted,
        )

    return wrap


SchemaCall = Callable[[Capabilities, dict[str, Any]], Awaitable[ToolOutput | str]]


def schema_tool(
    name: str,
    description: str,
    parameters: dict[str, Any],
    call: SchemaCall,
    *,
    title: str = "",
    read_only: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> ToolDef[dict[str, Any]]:
    """A tool whose arguments are described by a JSON schema written elsewhere (an MCP
    server's): the schema goes to the model as it is, made self-contained; arguments are
    checked against it before anything is asked or run. ValueError when it is no schema for
    an object of arguments (a provider would refuse every request carrying it)."""
    from tether.engine import schema_fit  # for an MCP server's tools: not at start

    schema = json_schema.self_contained(parameters)  # SchemaTooLarge (a ValueError)
    problem = json_schema.problem(schema)
    if problem is not None:
        raise ValueError(f"the input schema of {name} is unusable: {problem}")
    sent, unmap = schema_fit.fit(schema)
    return ToolDef(
        name=name,
        description=description,
        parameters=sent,
        args_type=None,
        fn=call,
        kind="read" if read_only else "other",
        read_only=read_only,
        timeout=timeout,
        title=title,
        check=json_schema.checker(schema),  # the original: the arguments are checked exactly
        unmap=unmap,
    )


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {argument: description})."""
    head, _, args_block = doc.partition("\nArgs:\n")
    args: dict[str, str] = {}
    current: str | None = None
    for line in args_block.splitlines():
        if not line.strip():
            continue
        m = re.match(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
        if m and (current is None or len(line) - len(line.lstrip()) <= 4):
            name = m.group(1)
            args[name] = m.group(2).strip()
            current = name
        elif current is not None and line.startswith(" "):
            args[current] = f"{args[current]} {line.strip()}".strip()
        else:
            break  # a new section (Returns:, Raises:) ends the arguments
    return " ".join(head.split()), args


def _args_type(fn: Callable[..., Any]) -> Any:
    """The ToolArgs Struct a tool function takes after `ctx`. Only that one annotation is
    evaluated, in the function's module, as `typing.get_type_hints` would: it evaluates every
    annotation (`ctx`'s, the return type's), a cost each tool paid as its module loaded."""
    params = list(inspect.signature(fn).parameters)
    hint = fn.__annotations__.get(params[1]) if len(params) == 2 else None
    try:
        if isinstance(hint, str):  # `from __future__ import annotations`: a name to look up
            hint = eval(hint, inspect.unwrap(fn).__globals__)
    except NameError as exc:  # a Struct defined inside a function is not found by name
        raise TypeError(
            f"tool {fn.__name__}: define its ToolArgs at module level ({exc})"
        ) from None
    if not (isinstance(hint, type) and issubclass(hint, ToolArgs)):
        raise TypeError(f"tool {fn.__name__} must take (ctx, args: a ToolArgs Struct)")
    return hint


def _json_schema(args_type: type[ToolArgs], docs: dict[str, str]) -> dict[str, Any]:
    """The arguments' JSON schema, self-contained: providers reject a whole request for one
    `$ref` they cannot resolve, so nested definitions are inlined where they are used."""
    full = msgspec.json.schema(args_type)
    _describe_fields(json_schema.target(full, full["$ref"]), args_type, docs)
    try:
        schema = _closed(json_schema.inline({"$ref": full["$ref"]}, full))
    except json_schema.RecursiveRef as exc:
        name = exc.ref.rpartition("/")[2]
        raise TypeError(f"tool argument type {name} is recursive; tools need flat types") from None
    schema.setdefault("required", [])
    schema["additionalProperties"] = False
    return schema


def _describe_fields(
    schema: dict[str, Any], args_type: type[ToolArgs], docs: dict[str, str]
) -> None:
    """Each documented field's description, first in its property (where msgspec puts the
    description of an annotated field)."""
    properties: dict[str, Any] = schema.get("properties", {})
    for f in msgspec.structs.fields(args_type):
        if f.name in docs and f.encode_name in properties:
            properties[f.encode_name] = {"description": docs[f.name], **properties[f.encode_name]}


def _closed(node: Any) -> Any:
    """msgspec's schema as a tool's: no titles (type names say nothing to a model), and every
    object closed, as our Structs forbid unknown fields."""
    if isinstance(node, list):
        return [_closed(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _closed(v) for k, v in node.items() if k not in ("title", "properties")}
    if isinstance(node.get("properties"), dict):  # a property may be called "title"
        out["properties"] = {k: _closed(v) for k, v in node["properties"].items()}
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


class DeferredTool(msgspec.Struct, frozen=True):
    """A tool known by its spec before its module is loaded (tools/tool_specs.py keeps the
    specs): `load` imports it and gives its ToolDef, the first time a call names it."""

    spec: ToolSpec
    load: Callable[[], ToolDef]

    @property
    def name(self) -> str:
        return self.spec.name


class Registry:
    """The catalog of tools a session may use, assembled by the composition root: fixed tools
    (loaded, or deferred: loaded when first called), plus sources whose tools come and go (a
    session's MCP servers), read at each lookup so a tool that arrives is offered from the
    next round on, and one that leaves is not."""

    def __init__(
        self,
        tools: Iterable[ToolDef | DeferredTool] = (),
        explainers: Iterable[Callable[[str], ToolError | None]] = (),
    ) -> None:
        self._tools: dict[str, ToolDef | DeferredTool] = {}
        self._sources: list[Callable[[], Iterable[ToolDef]]] = []
        self._explainers: list[Callable[[str], ToolError | None]] = list(explainers)
        for t in tools:
            self.add(t)

    def add(self, t: ToolDef | DeferredTool) -> None:
        self._tools[t.name] = t

    def include(self, source: Callable[[], Iterable[ToolDef]]) -> None:
        """Offer the tools `source()` returns at each lookup (fixed tools win a name clash)."""
        self._sources.append(source)

    def explain(self, explainer: Callable[[str], ToolError | None]) -> None:
        """Ask `explainer` why a tool is missing (a source's tool that left: its MCP server
        stopped) before saying there is no such tool."""
        self._explainers.append(explainer)

    def missing(self, name: str) -> ToolError:
        """Why there is no tool `name`, for the model."""
        for explainer in self._explainers:
            if (why := explainer(name)) is not None:
                return why
        return ToolError("UNKNOWN_TOOL", f"there is no tool named {name!r}")

    def get(self, name: str) -> ToolDef | None:
        found = self._tools.get(name)
        if isinstance(found, DeferredTool):
            found = self._tools[name] = found.load()
        if found is not None:
            return found
        return next((t for t in self._live() if t.name == name), None)

    def specs(self) -> list[ToolSpec]:
        """What the model is shown of each tool (a deferred one stays unloaded)."""
        return [t.spec for t in self._tools.values()] + [t.spec for t in self._live()]

    def _live(self) -> Iterator[ToolDef]:
        for source in self._sources:
            for t in source():
                if t.name not in self._tools:
                    yield t

    def __iter__(self) -> Iterator[ToolDef]:
        for name in list(self._tools):
            found = self.get(name)
            if found is not None:
                yield found
        yield from self._live()
