"""Code actions on a selection: "Ask tether" (the selected text is the question or instruction),
"Explain" and "Fix" (with the diagnostics the editor shows there). Each runs `tether.prompt` with
the document and the range; the prompt reads the selected text when it runs. An empty range
(a cursor) stands for its whole line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types

from tether.rpc.lsp.lsp_handshake import PROMPT

ASK = "The selected text is my question or instruction: answer it or do it."
EXPLAIN = "Explain what the selected code does."
FIX = "Fix the selected code."


def code_actions(
    params: types.CodeActionParams, literals: bool
) -> list[types.CodeAction | types.Command]:
    """The actions for the selection: CodeAction literals when the client takes them (so "Fix"
    is a quick fix), else bare Commands."""
    rng = _lines_of_cursor(params.range)
    doc = {"uri": params.text_document.uri}
    fix = FIX + _diagnostics(params.context.diagnostics)
    offered = [
        ("Ask tether", ASK, None),
        ("Explain", EXPLAIN, None),
        ("Fix", fix, types.CodeActionKind.QuickFix),
    ]
    out: list[types.CodeAction | types.Command] = []
    for title, prompt, kind in offered:
        argument: dict[str, Any] = {"prompt": prompt, "textDocument": doc, "range": _plain(rng)}
        command = types.Command(title=f"tether: {title}", command=PROMPT, arguments=[argument])
        if literals:
            diagnostics = list(params.context.diagnostics) if kind else None
            out.append(
                types.CodeAction(
                    title=f"tether: {title}", kind=kind, diagnostics=diagnostics, command=command
                )
            )
        else:
            out.append(command)
    return out


def _lines_of_cursor(rng: types.Range) -> types.Range:
    if rng.start != rng.end:
        return rng
    line = rng.start.line
    return types.Range(
        start=types.Position(line=line, character=0),
        end=types.Position(line=line + 1, character=0),
    )


def _diagnostics(diagnostics: Sequence[types.Diagnostic]) -> str:
    if not diagnostics:
        return ""
    lines = [
        f"- line {d.range.start.line + 1}: {d.message}" + (f" ({d.source})" if d.source else "")
        for d in diagnostics
    ]
    return "\nThe editor reports there:\n" + "\n".join(lines)


def _plain(rng: types.Range) -> dict[str, Any]:
    """The range as JSON (command arguments are LSPAny: plain values)."""
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }
