"""What one confined command may do: the data every mechanism (bubblewrap, Landlock, Seatbelt)
turns into its own terms."""

from __future__ import annotations

from pathlib import Path

import msgspec


class Confinement(msgspec.Struct, frozen=True):
    """`writable`: the trees a command may change (the session's roots, directories granted for
    writing). `protected`: paths inside them it may read but not change, and not make where
    they do not exist (uncommitted work, `.git`, what acts later). `hidden`: paths it may
    neither read nor run (secrets, denylisted programs, tether's own home). `tmp`: its
    private temporary directory, its `TMPDIR` (the rest of `/tmp` is read-only). `network`:
    whether it may open network connections. `tty`: it runs on a pseudo-terminal
    (job-control signals must reach it, not the sandbox around it)."""

    writable: tuple[Path, ...]
    tmp: Path
    protected: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    network: bool = False
    tty: bool = False
    # Where the mechanism finds an unreadable empty file and directory to mask hidden paths.
    masks: tuple[Path, Path] | None = None
    # An empty read-only directory, mounted where a protected path does not exist yet.
    placeholder: Path | None = None
    unset_env: tuple[str, ...] = msgspec.field(default=())  # variables the command must not see
