"""run_argv_batch: sequences, branches (`then` / `else`) and pipes of programs in one call, no
shell. Each command runs through `ctx.terminal` like run_argv's; the card streams the output of
the batch so far."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import anyio
import msgspec

from tether.command_policy.words import shell_join
from tether.engine.events import TerminalOut, TextOut, ToolContent
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import Capabilities, CommandResult, Stage
from tether.errors import ToolError
from tether.tools.command_args import (
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    check_argv,
    check_env,
    check_timeout,
    command_cwd,
)
from tether.tools.command_gate import (
    Command,
    confine,
    plan_commands,
    refuse_denylisted,
    sandbox_note,
)
from tether.tools.command_output import OUTPUT_LIMIT, CardProgress, raw_result, result_text
from tether.tools.text import fence

BATCH_TIMEOUT = 3600.0  # a whole batch, however many nodes
MAX_NODES = 20
MAX_LEVELS = 4


Continuation = Annotated[
    dict[str, Any] | list[dict[str, Any]],
    msgspec.Meta(description="A node (same fields as this one), or a list of nodes run in order."),
]


class BatchNode(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    argv: Annotated[list[str], msgspec.Meta(description="The program and its arguments.")]
    then: (
        Annotated[Continuation, msgspec.Meta(description="Runs when this node exits 0.")] | None
    ) = None
    else_: (
        Annotated[Continuation, msgspec.Meta(description="Runs when this node fails.")] | None
    ) = msgspec.field(default=None, name="else")
    pipe: (
        Annotated[
            Continuation,
            msgspec.Meta(
                description="Receives this node's stdout as its stdin (a list is a chain: "
                "a | b | c). Pipe steps take no then/else/stdin/stop_on_error/timeout_seconds."
            ),
        ]
        | None
    ) = None
    cwd: Annotated[str, msgspec.Meta(description="Working directory (inherited).")] | None = None
    env: (
        Annotated[dict[str, str], msgspec.Meta(description="Extra variables (inherited).")] | None
    ) = None
    stdin: Annotated[str, msgspec.Meta(description="Text for the standard input.")] | None = None
    mix_stderr: Annotated[
        bool, msgspec.Meta(description="Send stderr down the pipe with stdout (2>&1 |).")
    ] = False
    stop_on_error: Annotated[
        bool, msgspec.Meta(description="When this node fails (and has no else), stop the batch.")
    ] = False
    timeout_seconds: Annotated[float, msgspec.Meta(description="Default 120.")] | None = None


class _Node(msgspec.Struct):
    steps: list[Stage]  # the pipe chain, head first
    stdin: bytes | None
    stop_on_error: bool
    timeout: float
    where: str
    then: list[_Node] = msgspec.field(default_factory=list["_Node"])
    otherwise: list[_Node] = msgspec.field(default_factory=list["_Node"])

    @property
    def line(self) -> str:
        return " | ".join(shell_join(s.argv) for s in self.steps)


class _Parse(msgspec.Struct):
    ctx: Capabilities
    count: int = 0


def _parse_nodes(
    p: _Parse, raw: object, where: str, level: int, cwd: Path, env: dict[str, str]
) -> list[_Node]:
    if level > MAX_LEVELS:
        raise ToolError("INVALID_ARGS", f"{where}: batches nest at most {MAX_LEVELS} levels")
    items: list[object] = raw if isinstance(raw, list) else [raw]
    if not items:
        raise ToolError("INVALID_ARGS", f"{where} must hold at least one node")
    nodes: list[_Node] = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]" if isinstance(raw, list) else where
        nodes.append(_parse_node(p, _as_node(item, at), at, level, cwd, env))
    return nodes


def _as_node(item: object, where: str) -> BatchNode:
    if isinstance(item, BatchNode):
        return item
    if isinstance(item, dict) and isinstance(item.get("argv"), str):
        check_argv(item["argv"], f"{where}.argv")
    try:
        return msgspec.convert(item, BatchNode)
    except msgspec.ValidationError as exc:
        message = str(exc).replace("`$.", f"`{where}.").replace("`$`", f"`{where}`")
        raise ToolError("INVALID_ARGS", f"{where}: {message}") from None


def _parse_node(
    p: _Parse, node: BatchNode, where: str, level: int, cwd: Path, env: dict[str, str]
) -> _Node:
    head = _stage(p, node, where, cwd, env)
    steps = [head, *_pipe_steps(p, node.pipe, f"{where}.pipe", level + 1, head.cwd, head.env)]
    timeout = check_timeout(
        node.timeout_seconds, DEFAULT_TIMEOUT, MAX_TIMEOUT, f"{where}.timeout_seconds"
    )
    out = _Node(
        steps,
        node.stdin.encode("utf-8") if node.stdin is not None else None,
        node.stop_on_error,
        timeout,
        where,
    )
    if node.then is not None:
        out.then = _parse_nodes(p, node.then, f"{where}.then", level + 1, head.cwd, head.env)
    if node.else_ is not None:
        out.otherwise = _parse_nodes(p, node.else_, f"{where}.else", level + 1, head.cwd, head.env)
    return out


def _stage(p: _Parse, node: BatchNode, where: str, cwd: Path, env: dict[str, str]) -> Stage:
    p.count += 1
    if p.count > MAX_NODES:
        raise ToolError("INVALID_ARGS", f"a batch holds at most {MAX_NODES} nodes")
    argv = check_argv(node.argv, f"{where}.argv")
    here = command_cwd(p.ctx, node.cwd, f"{where}.cwd") if node.cwd is not None else cwd
    merged = {**env, **check_env(node.env, f"{where}.env")}
    return Stage(argv, here, merged, node.mix_stderr)


def _pipe_steps(
    p: _Parse, raw: object, where: str, level: int, cwd: Path, env: dict[str, str]
) -> list[Stage]:
    if raw is None:
        return []
    if level > MAX_LEVELS:
        raise ToolError("INVALID_ARGS", f"{where}: batches nest at most {MAX_LEVELS} levels")
    items: list[object] = raw if isinstance(raw, list) else [raw]
    steps: list[Stage] = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]" if isinstance(raw, list) else where
        node = _as_node(item, at)
        extra = [
            name
            for name, given in (
                ("then", node.then is not None),
                ("else", node.else_ is not None),
                ("stdin", node.stdin is not None),
                ("stop_on_error", node.stop_on_error),
                ("timeout_seconds", node.timeout_seconds is not None),
            )
            if given
        ]
        if extra:
            raise ToolError(
                "INVALID_ARGS",
                f"{at}: a pipe step takes no {', '.join(extra)} (put them on the chain's "
                "first node; the last step's exit code decides then/else)",
            )
        if node.pipe is not None and isinstance(raw, list) and len(items) > 1:
            raise ToolError(
                "INVALID_ARGS", f"{at}: inside a pipe list, give the whole chain as the list"
            )
        stage = _stage(p, node, at, cwd, env)
        steps.append(stage)
        steps += _pipe_steps(p, node.pipe, f"{at}.pipe", level + 1, stage.cwd, stage.env)
    return steps


def _batch(ctx: Capabilities, nodes: list[BatchNode]) -> list[_Node]:
    if not nodes:
        raise ToolError("INVALID_ARGS", "nodes must hold at least one node")
    return _parse_nodes(_Parse(ctx), nodes, "nodes", 1, ctx.cwd, {})


def _walk(nodes: list[_Node]) -> list[_Node]:
    out: list[_Node] = []
    for n in nodes:
        out += [n, *_walk(n.then), *_walk(n.otherwise)]
    return out


def _render(node: _Node) -> str:
    """The node as (nearly) shell: `a && b`, `a || c`, `if a; then b; else c; fi`."""
    if node.then and node.otherwise:
        return f"if {node.line}; then {_seq(node.then)}; else {_seq(node.otherwise)}; fi"
    if node.then:
        return f"{node.line} && {_group(node.then)}"
    if node.otherwise:
        return f"{node.line} || {_group(node.otherwise)}"
    return node.line


def _seq(nodes: list[_Node]) -> str:
    return "; ".join(_render(n) for n in nodes)


def _group(nodes: list[_Node]) -> str:
    if len(nodes) == 1 and not (nodes[0].then or nodes[0].otherwise):
        return nodes[0].line
    return "{ " + _seq(nodes) + "; }"


def _listing(nodes: list[_Node], indent: str = "", label: str = "") -> list[str]:
    """One `$ command` line per node; then/else bodies indented under the node they follow."""
    lines: list[str] = []
    for n in nodes:
        lines.append(f"{indent}{label}$ {_elide(n.line, 80)}")
        lines += _listing(n.then, indent + "  ", "then: ")
        lines += _listing(n.otherwise, indent + "  ", "else: ")
    return lines


def _elide(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class RunArgvBatchArgs(ToolArgs):
    nodes: list[BatchNode]
    unconfined: bool = False
    reason: str | None = None


@tool(kind="execute", timeout=BATCH_TIMEOUT + 60)
async def run_argv_batch(ctx: Capabilities, args: RunArgvBatchArgs) -> ToolOutput:
    """Run programs in order, with branches and pipes, in one call; returns each command's
    exit code and output, in the order they ran.

    A node is `argv` plus optional `then` (runs when it exits 0), `else` (runs when it fails)
    and `pipe` (gets its stdout as stdin; a list is a chain a | b | c, and only the last
    step's exit code decides then/else), each one node or a list of nodes. A continuation
    inherits its parent's `cwd` and `env`. Without `stop_on_error`, a failed node does not
    stop the nodes after it. At most 20 nodes and 4 levels. No shell is involved: each argv
    is one program with its arguments.

    Args:
        nodes: The nodes to run in order, e.g. [{"argv": ["ruff", "check", "."], "then":
            {"argv": ["pytest", "-q"]}}, {"argv": ["git", "diff", "--stat"], "pipe":
            {"argv": ["tail", "-n", "1"]}}].
        unconfined: Run every node outside the sandbox (asks every time; give `reason`).
        reason: Why the commands must run unconfined: what the sandbox stops them doing.
    """
    tree = await anyio.to_thread.run_sync(_batch, ctx, args.nodes)
    refuse_denylisted(ctx, _commands(tree))
    run = _BatchRun(ctx, len(_walk(tree)), args.unconfined)
    await run.progress.around(lambda: run.run_list(tree, ""))
    text = run.text()
    content: list[ToolContent] = [TerminalOut(t) for t in run.progress.terminals]
    content.append(TextOut(text.split("\n", 1)[0] if content else fence(text)))
    return ToolOutput(text, content, raw_output={"commands": run.raw})


def _commands(tree: list[_Node]) -> list[Command]:
    """Every stage as the judgement sees it: the chain's head reads the node's `stdin`, each
    later stage the output of the one before it."""
    out: list[Command] = []
    for n in _walk(tree):
        out.append(Command(n.steps[0].argv, n.steps[0].cwd, n.steps[0].env, stdin=n.stdin))
        for before, s in zip(n.steps, n.steps[1:], strict=False):
            out.append(Command(s.argv, s.cwd, s.env, stdin_from=tuple(before.argv)))
    return out


class _BatchRun:
    def __init__(self, ctx: Capabilities, total: int, unconfined: bool) -> None:
        self.ctx = ctx
        self.unconfined = unconfined
        self.limit = max(2_000, OUTPUT_LIMIT // total)
        self.deadline = anyio.current_time() + BATCH_TIMEOUT
        self.blocks: list[str] = []
        self.raw: list[dict[str, Any]] = []
        self.failed = 0
        self.stopped: str | None = None
        self.skipped: list[_Node] = []
        self.progress = CardProgress(ctx.report)

    async def run_list(self, nodes: list[_Node], label: str) -> None:
        for node in nodes:
            if self.stopped is not None:
                self.skipped.append(node)
                continue
            ok = await self.run_node(node, label)
            branch = node.then if ok else node.otherwise
            if branch:
                await self.run_list(branch, "(then) " if ok else "(else) ")
            elif not ok and node.stop_on_error:
                self.stopped = f"`{_elide(node.line, 80)}` failed and has stop_on_error"

    async def run_node(self, node: _Node, label: str) -> bool:
        timeout = min(node.timeout, max(self.deadline - anyio.current_time(), 0.001))
        self.progress.restart("\n\n".join([*self.blocks, f"{label}$ {node.line}\n"]))
        result = await self._execute(node, timeout)
        ok = result.exit_code == 0 and not result.timed_out
        self.failed += not ok
        text = result_text(result, timeout)
        note = sandbox_note(self.ctx, result, unconfined=self.unconfined)
        self.blocks.append(f"{label}$ {node.line}\n{text}" + (f"\n{note}" if note else ""))
        self.raw.append({"command": node.line, **raw_result(result)})
        return ok

    async def _execute(self, node: _Node, timeout: float) -> CommandResult:
        terminal = self.ctx.terminal
        steps = [await self._confined(s) for s in node.steps]
        spill, name = self.ctx.spill, f"run_argv_batch-{self.ctx.call_id}-output"
        if len(steps) == 1:
            step = steps[0]
            return await terminal.run(
                step.argv,
                cwd=step.cwd,
                env=step.env,
                timeout=timeout,
                output_limit=self.limit,
                stdin=node.stdin,
                progress=self.progress,
                overflow=lambda: spill.reserve(name),
                launcher=step.launcher,
            )
        return await terminal.run_pipeline(
            steps,
            stdin=node.stdin,
            timeout=timeout,
            output_limit=self.limit,
            progress=self.progress,
            overflow=lambda: spill.reserve(name),
        )

    async def _confined(self, step: Stage) -> Stage:
        started = await confine(self.ctx, step.argv, step.cwd, step.env, unconfined=self.unconfined)
        return Stage(started.argv, step.cwd, started.env, step.mix_stderr, started.launcher)

    def text(self) -> str:
        ran = len(self.blocks)
        head = f"{ran} command{'s' if ran != 1 else ''} ran: {ran - self.failed} succeeded"
        head += f", {self.failed} failed" if self.failed else ""
        tail: list[str] = []
        if self.stopped is not None:
            shown = "; ".join(_render(n) for n in self.skipped)
            tail.append(f"[stopped: {self.stopped}; not run: {_elide(shown, 400)}]")
        return "\n\n".join([head, *self.blocks, *tail])


@run_argv_batch.planned_by
async def _plan_batch(ctx: Capabilities, args: RunArgvBatchArgs, mode: str) -> CallPlan:
    tree = await anyio.to_thread.run_sync(_batch, ctx, args.nodes)
    commands = _commands(tree)
    listing = _listing(tree) if len(commands) > 1 else []
    plan = await plan_commands(
        ctx, commands, mode, unconfined=args.unconfined, reason=args.reason, notes=listing
    )
    plan.title = plan.target = _elide("; ".join(_render(n) for n in tree), 200)
    return plan


@run_argv_batch.described_by
def _describe_batch(ctx: Capabilities, args: RunArgvBatchArgs) -> CallPlan:
    lines = [shell_join(n.argv) for n in args.nodes]
    return CallPlan(title=_elide("; ".join(lines), 200), kind="execute")
