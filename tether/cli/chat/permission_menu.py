"""A permission request (a tool call's, or a whole round's card) as a menu below the cards: the
agent's options by name, chosen with the arrow keys and Enter, or at once by their number.
Ctrl-C (or Escape) answers nothing: the caller cancels."""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import FormattedTextControl, HSplit, Layout, Window

from tether.schemas import acp

POINTER = "\N{HEAVY RIGHT-POINTING ANGLE QUOTATION MARK ORNAMENT}"


class PermissionMenu:
    def __init__(self, params: acp.RequestPermissionRequest) -> None:
        self.params = params
        self.options = params.options
        self.selected = 0

    async def choose(self) -> str | None:
        """The chosen option's id, or None (Ctrl-C, Escape)."""
        app: Application[str | None] = Application(
            layout=Layout(HSplit([Window(FormattedTextControl(self._lines), wrap_lines=True)])),
            key_bindings=self._keys(),
            full_screen=False,
            erase_when_done=True,  # the view prints the answer in one line instead
        )
        # No SIGINT handler of its own: the chat's stays in place (Ctrl-C here is a key).
        return await app.run_async(handle_sigint=False)

    def _lines(self) -> StyleAndTextTuples:
        card = self.params.tool_call
        title = card.title if isinstance(card.title, str) else card.tool_call_id
        lines: StyleAndTextTuples = [("bold", f"Allow {title}?\n")]
        for i, o in enumerate(self.options, 1):
            here = i - 1 == self.selected
            lines.append(
                ("reverse" if here else "", f" {POINTER if here else ' '} {i}. {o.name}\n")
            )
        lines.append(("italic", "  ↑/↓ and Enter, or a number; Esc cancels the turn"))
        return lines

    def _keys(self) -> KeyBindings:
        kb = KeyBindings()

        @kb.add("up")
        def _up(event: KeyPressEvent) -> None:
            self.selected = (self.selected - 1) % len(self.options)

        @kb.add("down")
        def _down(event: KeyPressEvent) -> None:
            self.selected = (self.selected + 1) % len(self.options)

        @kb.add("enter")
        def _enter(event: KeyPressEvent) -> None:
            event.app.exit(result=self.options[self.selected].option_id)

        @kb.add("c-c")
        @kb.add("escape")
        def _cancel(event: KeyPressEvent) -> None:
            event.app.exit(result=None)

        for i, option in enumerate(self.options[:9], 1):
            kb.add(str(i))(_picker(option.option_id))
        return kb


def _picker(option_id: str) -> Callable[[KeyPressEvent], None]:
    def pick(event: KeyPressEvent) -> None:
        event.app.exit(result=option_id)

    return pick


async def choose_option(params: acp.RequestPermissionRequest) -> str | None:
    return await PermissionMenu(params).choose()
