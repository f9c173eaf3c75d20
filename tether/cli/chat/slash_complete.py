"""Completion of `/commands` at the chat's prompt: the agent's own (its
`available_commands_update` lists them, with what each does) and the chat's `/exit`."""

from __future__ import annotations

from collections.abc import Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from tether.schemas import acp

LOCAL_COMMANDS = {"exit": "Leave the chat (as Ctrl-D)", "quit": "Leave the chat (as Ctrl-D)"}


class SlashCompleter(Completer):
    def __init__(self) -> None:
        self.commands: list[acp.AvailableCommand] = []

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        del complete_event
        typed = document.text_before_cursor
        if not typed.startswith("/") or " " in typed:
            return
        for name, about in self._named():
            if name.startswith(typed[1:]):
                yield Completion(
                    f"/{name}", start_position=-len(typed), display=f"/{name}", display_meta=about
                )

    def _named(self) -> list[tuple[str, str]]:
        agents = [(c.name, c.description) for c in self.commands]
        return agents + [(n, a) for n, a in LOCAL_COMMANDS.items() if n not in dict(agents)]
