"""The embedded demo model, used when no provider is configured.

On every prompt it lists the project, reads one text file, proposes an edit to it that needs the
user's approval (it toggles a one-line "reviewed by the tether demo" note), and answers. It decides
from the conversation alone, like a real model, so a newcomer can repeat the flow anywhere. Its
first answer in a session says, in one line, what it is and how to configure a real model.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import PurePosixPath

import msgspec

from tether.engine.history import AssistantMessage, ToolResultMessage
from tether.engine.providers import base as llm
from tether.errors import ProviderError

INFO = llm.ModelInfo("demo", "tether demo (scripted, offline)", context_window=32_000)
_PREFERRED = ("README.md", "README", "README.rst", "README.txt")
_TEXT_SUFFIXES = {
    ".md",
    ".txt",
    ".rst",
    ".py",
    ".toml",
    ".cfg",
    ".ini",
    ".json",
    ".yaml",
    ".yml",
    ".js",
    ".ts",
    ".c",
    ".h",
    ".rs",
    ".go",
    ".sh",
    ".html",
    ".css",
}
_MARK = "reviewed by the tether demo"
INTRODUCTION = (
    "This is tether's offline demo model; set OPENAI_API_KEY / ANTHROPIC_API_KEY, OPENAI_BASE_URL "
    "for a local server, or run `tether config init` to use a real model."
)


class DemoModel:
    @property
    def info(self) -> llm.ModelInfo:
        return INFO

    async def stream(self, request: llm.ChatRequest) -> AsyncGenerator[llm.StreamEvent, None]:
        last = request.messages[-1] if request.messages else None
        if isinstance(last, ToolResultMessage):
            steps = _after_tool(last, request)
        else:
            steps = _start(first=not any(isinstance(m, AssistantMessage) for m in request.messages))
        called = False
        # Ids unique within the session, as ACP asks: numbered after every earlier call.
        made = sum(len(m.tool_calls) for m in request.messages if isinstance(m, AssistantMessage))
        for item in steps:
            if isinstance(item, llm.ToolCallDelta):
                called, made = True, made + 1
                item = llm.ToolCallDelta(f"demo_{item.name}_{made}", item.name, item.arguments)
            yield item
        yield llm.Usage(_estimate(request), 60, estimated=True)
        yield llm.Finish("tool_calls" if called else "stop")


def _words(text: str) -> list[llm.StreamEvent]:
    return [llm.TextDelta(w) for w in text.replace(" ", " \0").split("\0")]


def _call(name: str, args: dict[str, object]) -> llm.ToolCallDelta:
    """A call; its id is given as it streams (see `stream`)."""
    return llm.ToolCallDelta("", name, msgspec.json.encode(args).decode())


def _start(*, first: bool) -> list[llm.StreamEvent]:
    return [
        llm.ThoughtDelta("The user wants to see what I can do. I'll look at the project first."),
        *([llm.TextDelta(INTRODUCTION + "\n\n")] if first else []),
        *_words("Let me look around the project."),
        _call("list_dir", {"path": "."}),
    ]


def _after_tool(last: ToolResultMessage, request: llm.ChatRequest) -> list[llm.StreamEvent]:
    if last.name == "list_dir" and not last.is_error:
        target = _pick_file(last.content)
        if target is None:
            return _words(
                "This project has no text file I could read, so there is nothing to edit."
            )
        return [*_words(f" I'll read `{target}`."), _call("read_file", {"path": target})]
    if last.name == "read_file" and not last.is_error:
        path = _read_path(request)
        new = _toggle(path, _strip_label(last.content))
        return [
            *_words(f" I propose a small edit to `{path}`: it needs your approval."),
            _call("write_file", {"path": path, "content": new, "overwrite": True}),
        ]
    if last.name == "write_file":
        if last.is_error:
            return _words(f" The edit was not applied: {last.content.splitlines()[0]}")
        return _words(" Done: the edit is applied. Run me again to toggle it back.")
    return _words(f" The {last.name} call failed: {last.content.splitlines()[0]}")


def _pick_file(listing: str) -> str | None:
    names = [line.strip() for line in listing.splitlines()[1:] if line and not line.endswith("/")]
    for name in _PREFERRED:
        if name in names:
            return name
    for name in names:
        if PurePosixPath(name).suffix in _TEXT_SUFFIXES:
            return name
    return None


def _read_path(request: llm.ChatRequest) -> str:
    for m in reversed(request.messages):
        if isinstance(m, AssistantMessage):
            for c in m.tool_calls:
                if c.name == "read_file":
                    return str(msgspec.json.decode(c.arguments)["path"])
    raise ProviderError("demo: no read_file call in the conversation")


def _strip_label(content: str) -> str:
    head, _, body = content.partition("\n")
    return body if head.startswith("L") else content


def _toggle(path: str, text: str) -> str:
    suffix = PurePosixPath(path).suffix
    if suffix in {".md", ".html", ".rst"}:
        note = f"<!-- {_MARK} -->"
    elif suffix in {".js", ".ts", ".c", ".h", ".rs", ".go", ".css"}:
        note = f"// {_MARK}"
    else:
        note = f"# {_MARK}"
    lines = text.splitlines()
    if lines and lines[-1] == note:
        return "\n".join(lines[:-1]) + "\n"
    return text + ("" if text.endswith("\n") or not text else "\n") + note + "\n"


def _estimate(request: llm.ChatRequest) -> int:
    return (
        sum(len(msgspec.json.encode(m)) for m in request.messages) // 4 + len(request.system) // 4
    )
