"""The first prompt's answer comes before the chores a session's opening starts in the
background: the sandbox's probe (its `bwrap` and `env` processes) and the providers' model
lists. Neither is needed for that answer (the probe is waited for by the first command, the
lists by the model menu), and on a busy machine they took CPU from it. A chore waits briefly
for a prompt sent with `session/new` (as an editor that opens a chat with a message does; a
prompt counts from the moment it is read); when one came, it waits for its answer to start
streaming (or the prompt to be answered), at most `LIMIT` seconds; when none came, it goes.
"""

from __future__ import annotations

import anyio

SETTLE = 0.5  # seconds a chore waits for a prompt sent together with `session/new`
LIMIT = 10.0  # seconds a chore waits for a first answer at most


class FirstAnswer:
    """One per process: whether a first turn is under way, and when it answered."""

    def __init__(self) -> None:
        self._prompted = False
        self._done = False
        self._answered: anyio.Event | None = None  # made in the event loop, when waited on

    def prompted(self) -> None:
        """A turn starts: chores wait for its answer."""
        self._prompted = True

    def answered(self) -> None:
        """The turn's answer is streaming (or the turn ended): chores may go."""
        self._done = True
        if self._answered is not None:
            self._answered.set()

    async def wait(self) -> None:
        """Return once a chore may go (see the module's docstring)."""
        if self._done:
            return
        await anyio.sleep(SETTLE)
        if self._prompted and not self._done:
            self._answered = self._answered or anyio.Event()
            with anyio.move_on_after(LIMIT):
                await self._answered.wait()
