"""Host notices: what tether tells the model about the session itself, not the user's words
(tether was restarted and what that dropped; the session moved to another folder). A notice is
kept with the session's state until its next prompt, then sent to the model at the head of
that prompt's message: it is stored there, in order, so every later request (and a reload)
carries it where it happened, while the client shows the user's own words only. The user sees
each notice when it is made, as a notice (recorded, so a reload replays it in order)."""

from __future__ import annotations

import msgspec

from tether.engine.history import TextPart, UserPart


class HostNotice(msgspec.Struct, frozen=True):
    kind: str  # one pending notice per kind: a newer one replaces it
    title: str  # what the user is shown
    text: str  # what the model reads

    def part(self) -> TextPart:
        return TextPart(f"<tether-notice kind={self.kind!r}>\n{self.text}\n</tether-notice>")


def restarted() -> HostNotice:
    return HostNotice(
        "restart",
        "Resumed in a new tether process: PTYs and running commands of the last one are gone",
        "tether was restarted since your last turn in this session (the session was opened "
        "again by a new tether process). Everything that lived in the old process is gone: "
        "PTYs opened with open_pty (their ids no longer exist), commands that were still "
        "running, and the sandbox's private temporary directory. Files in the project are as "
        "they were left. Open a PTY or run a command again if you still need it.",
    )


def moved(old: str, new: str) -> HostNotice:
    return HostNotice(
        "folder",
        f"The session moved from {old} to {new}",
        f"The user moved this session from the folder {old} to {new}: the working directory "
        f"is now {new}. Paths in earlier messages refer to {old}; relative paths now resolve "
        f"in {new}. The project snapshot in the system prompt is retaken there.",
    )


def add(notices: list[HostNotice], notice: HostNotice) -> list[HostNotice]:
    """`notices` with `notice` last, replacing a pending one of its kind."""
    return [n for n in notices if n.kind != notice.kind] + [notice]


def with_notices(notices: list[HostNotice], parts: list[UserPart]) -> list[UserPart]:
    """A prompt's parts as the model gets them: the pending notices first."""
    return [*(n.part() for n in notices), *parts] if notices else parts
