"""`initialize` for `tether lsp`: the server's capabilities, in plain JSON.

No heavy imports: the first `initialize` is answered before the event loop, pygls and
lsprotocol are loaded (together they take a few hundred milliseconds to import, and editors wait
on this answer; see tether/rpc/startup.py). The same answer serves an `initialize` that arrives
later, so there is one source of truth for what the server offers.
"""

from __future__ import annotations

from tether import __version__
from tether.rpc.startup import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

PROMPT = "tether.prompt"
CANCEL = "tether.cancel"
# The slash commands every session offers (engine/slash/slash_registry.py: its fixed
# commands, then `/skills`; tests/lsp/test_lsp_commands.py keeps the two lists equal), each also
# `tether.NAME` with an optional argument string: named here so that the first answer imports
# no engine. A skill's and an MCP prompt's commands vary by session: typed as prompts.
SLASH_NAMES = (
    *("mode", "model", "undo", "title", "compact", "retry", "status", "btw", "clear"),
    *("export", "grants", "init", "todos", "mcp", "yolo", "help", "skills"),
)
SLASH = [f"tether.{name}" for name in SLASH_NAMES]
COMMANDS = [PROMPT, CANCEL, *SLASH]
# What pygls can convert positions from, in the order it prefers when the client offers none.
ENCODINGS = ("utf-8", "utf-16", "utf-32")
DEFAULT_ENCODING = "utf-16"
INCREMENTAL_SYNC = 2


class LspHandshake:
    ensure_ascii = True  # as pygls writes its answers: non-ASCII ids go out escaped

    def __init__(self) -> None:
        self.params: dict[str, Any] | None = None  # the client's `initialize` params
        self.encoding = DEFAULT_ENCODING

    @property
    def done(self) -> bool:
        return self.params is not None

    def clean(self, params: object) -> dict[str, Any] | None:
        return clean_params(params)

    def answer(self, params: dict[str, Any]) -> dict[str, Any]:
        """The `initialize` result for params that passed `clean_params`."""
        self.params = params
        self.encoding = position_encoding(params)
        return {
            "capabilities": {
                "positionEncoding": self.encoding,
                "textDocumentSync": {"openClose": True, "change": INCREMENTAL_SYNC},
                "codeActionProvider": True,
                "executeCommandProvider": {"commands": list(COMMANDS)},
                "workspace": {"workspaceFolders": {"supported": True}},
            },
            "serverInfo": {"name": "tether", "version": __version__},
        }


def position_encoding(params: dict[str, Any]) -> str:
    """The first encoding the client lists that we convert (as pygls chooses), else UTF-16."""
    general = params["capabilities"].get("general")
    offered = general.get("positionEncodings") if isinstance(general, dict) else None
    if isinstance(offered, list):
        for encoding in offered:
            if encoding in ENCODINGS:
                return encoding
    return DEFAULT_ENCODING


def clean_params(params: object) -> dict[str, Any] | None:
    """The params when they are a plausible `initialize` (the shape the answer relies on);
    None sends the request down the slow path, which reports what is wrong."""
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return None
    general = params["capabilities"].get("general")
    if general is not None and not isinstance(general, dict):
        return None
    for key in ("rootUri", "rootPath"):
        if params.get(key) is not None and not isinstance(params[key], str):
            return None
    folders = params.get("workspaceFolders")
    if folders is not None and not (
        isinstance(folders, list)
        and all(isinstance(f, dict) and isinstance(f.get("uri"), str) for f in folders)
    ):
        return None
    return params
