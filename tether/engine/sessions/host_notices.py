"""Host notices: what tether tells the model about the session itself, not the user's words
(a new process runs it, so the PTYs of the last one are gone; it moved to another folder). A
notice is kept with the session's state until its next prompt, then sent to the model at the
head of that prompt's message: it is stored there, in order, so every later request carries it
where it happened, while the client shows the user's own words only. The user is shown it then
too, as a notice kept with the session's events, so a reload replays it in order."""

from __future__ import annotations

from tether.engine.history import TextPart, UserPart
from tether.engine.sessions.state import HostNotice


def restarted() -> HostNotice:
    return HostNotice(
        "restart",
        "A new tether process runs this session: the PTYs of the last one are gone",
        "This session is now run by a new tether process (tether was restarted, or another "
        "window opened the session). What lived in the process that ran your earlier turns is "
        "not here: PTYs opened with open_pty (their ids no longer exist), commands that were "
        "still running, and the sandbox's private temporary directory. Files in the project "
        "are as they were left. Open a PTY or run a command again if you still need it.",
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


def parts(notices: list[HostNotice]) -> list[UserPart]:
    """The notices as the head of a prompt's message to the model."""
    return [
        TextPart(f"<tether-notice kind={n.kind!r}>\n{n.text}\n</tether-notice>") for n in notices
    ]
