"""`tether.prompt`'s argument, `{"prompt": "...", "textDocument"?: {"uri"}, "range"?: Range,
"wait"?: bool}`, checked and turned into the user's message: the prompt, then the file and the
selected lines (read as the editor has them, unsaved changes included). `wait` chooses how this
prompt is answered (the turn's answer as the result, or at once), over the connection's way."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path
from pygls.workspace import PositionCodec, TextDocument

from tether.engine.seam import FileSystem
from tether.errors import SeamError
from tether.rpc.lsp.lsp_handshake import PROMPT

USAGE = (
    f'{PROMPT} takes one argument: {{"prompt": "...", "textDocument"?: {{"uri": "file:///..."}}, '
    '"range"?: {"start": {"line", "character"}, "end": {...}}, "wait"?: true|false}'
)
MAX_SELECTION = 100_000  # characters of a selection put in the prompt


@dataclass(frozen=True)
class PromptArgs:
    prompt: str
    path: Path | None = None
    range: types.Range | None = None
    wait: bool | None = None  # None: as the connection answers prompts


def slash_prompt(name: str, arguments: tuple[Any, ...]) -> dict[str, Any]:
    """`tether.NAME`'s arguments (none, or one string: the command's argument) as the
    argument of `tether.prompt`."""
    if len(arguments) > 1 or (arguments and not isinstance(arguments[0], str)):
        raise JsonRpcInvalidParams(
            f"Invalid params: tether.{name} takes at most one argument, a string"
        )
    text = arguments[0].strip() if arguments else ""
    return {"prompt": f"/{name} {text}".strip()}


def parse(arguments: tuple[Any, ...], converter: cattrs.Converter) -> PromptArgs:
    if len(arguments) != 1 or not isinstance(arguments[0], dict):
        raise JsonRpcInvalidParams(f"Invalid params: {USAGE}")
    arg: dict[str, Any] = arguments[0]
    prompt = arg.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise JsonRpcInvalidParams("Invalid params: prompt must be a non-empty string")
    doc, rng = arg.get("textDocument"), arg.get("range")
    path = _path(doc) if doc is not None else None
    if rng is not None and path is None:
        raise JsonRpcInvalidParams("Invalid params: a range needs its textDocument")
    wait = arg.get("wait")
    if wait is not None and not isinstance(wait, bool):
        raise JsonRpcInvalidParams("Invalid params: wait must be true or false")
    selected = _range(rng, converter) if rng is not None else None
    return PromptArgs(prompt.strip(), path, selected, wait)


def _path(doc: object) -> Path:
    uri = doc.get("uri") if isinstance(doc, dict) else None
    path = to_fs_path(uri) if isinstance(uri, str) and uri.startswith("file:") else None
    if path is None or not os.path.isabs(path):
        raise JsonRpcInvalidParams(
            f"Invalid params: textDocument.uri must be a file URI, got {uri!r}"
        )
    return Path(os.path.normpath(path))


def _range(raw: object, converter: cattrs.Converter) -> types.Range:
    try:
        rng = converter.structure(raw, types.Range)
    except Exception as exc:
        why = (
            "; ".join(cattrs.transform_error(exc))
            if isinstance(exc, cattrs.BaseValidationError)
            else exc
        )
        raise JsonRpcInvalidParams(f"Invalid params: range: {why}") from None
    if (rng.start.line, rng.start.character) > (rng.end.line, rng.end.character):
        raise JsonRpcInvalidParams("Invalid params: range ends before it starts")
    return rng


async def prompt_text(args: PromptArgs, fs: FileSystem, cwd: Path, encoding: str) -> str:
    """The user's message: the prompt, and the file (and the selected lines) it is about."""
    if args.path is None:
        return args.prompt
    shown = _shown(args.path, cwd)
    if args.range is None:
        return f"{args.prompt}\n\n(About the file {shown}.)"
    try:
        text = await fs.read_text(args.path)
    except SeamError as exc:
        return f"{args.prompt}\n\n(About {shown}, which could not be read: {exc.message}.)"
    codec = PositionCodec(encoding)  # the encoding the client's positions use
    doc = TextDocument(args.path.as_uri(), source=text, position_codec=codec)
    selected = doc.text_in_client_range(args.range)
    if len(selected) > MAX_SELECTION:
        selected = selected[:MAX_SELECTION] + "\n[… selection cut here]"
    first, last = args.range.start.line + 1, max(args.range.start.line, _last_line(args.range)) + 1
    lines = f"line {first}" if first == last else f"lines {first}-{last}"
    return f"{args.prompt}\n\nSelected in {shown}, {lines}:\n```\n{selected}\n```"


def _last_line(rng: types.Range) -> int:
    """The last line a range covers (a range ending at column 0 stops before that line)."""
    return (
        rng.end.line - 1
        if rng.end.character == 0 and rng.end.line > rng.start.line
        else rng.end.line
    )


def _shown(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)
