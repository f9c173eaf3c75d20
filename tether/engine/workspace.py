"""The workspace policy: which paths a tool may touch. One policy every tool asks.

A path is allowed when it lies inside a root (the session cwd and the client's
`additionalDirectories`) or a granted directory, after symlinks are resolved; a read may also
reach the read-only roots (the skills' directories). A change inside a guarded directory (a
skills root) is asked for every time, whatever the mode or an earlier answer. The denylist
(`.git` internals, `.env*`, key files; configurable) wins over every root and grant: it is checked
on the path as the model wrote it and on the resolved path, relative to the root that holds it.
"""

from __future__ import annotations

import fnmatch
import os
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from tether.errors import PathRefused

Access = Literal["read", "write"]

DEFAULT_DENYLIST: tuple[str, ...] = (
    ".git",
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".ssh",
    ".gnupg",
    ".aws",
)
MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255


class DirGrant(msgspec.Struct, frozen=True):
    """A directory outside the roots the user opened to tools (read, or read and write)."""

    path: Path
    access: Access = "read"


# Directories opened to a session's tools for as long as this process lives, never stored with
# the session (temporary workspaces: engine/local/temp_workspaces.py). Fronts add them to the
# stored grants each time they build a session's workspace.
_PROCESS_GRANTS: dict[str, list[DirGrant]] = {}


def process_grants(session_id: str) -> list[DirGrant]:
    return list(_PROCESS_GRANTS.get(session_id, ()))


def add_process_grant(session_id: str, grant: DirGrant) -> None:
    _PROCESS_GRANTS.setdefault(session_id, []).append(grant)


def configured_grants(allow: Mapping[str, str]) -> list[DirGrant]:
    """`[agent] allow_paths` (directory -> read, write or exec) as grants every session starts
    with, nobody asked: `~` is the home directory, `exec` is write access (commands run
    there write too)."""
    return [
        DirGrant(_real(Path(path).expanduser()), "read" if mode == "read" else "write")
        for path, mode in allow.items()
    ]


class Workspace(msgspec.Struct):
    roots: list[Path]
    denylist: Sequence[str] = DEFAULT_DENYLIST
    grants: list[DirGrant] = msgspec.field(default_factory=list[DirGrant])
    # Told of every grant made during a turn, so the session keeps it.
    on_grant: Callable[[DirGrant], None] | None = None
    read_roots: list[Path] = msgspec.field(default_factory=list[Path])  # readable, never written
    guarded: list[Path] = msgspec.field(default_factory=list[Path])  # every change there is asked
    # Made from `denylist` as the workspace is made (a field, as a Struct keeps no other
    # attribute; equal denylists make it equal, so equality is the other fields' as before).
    _patterns: list[str] = msgspec.field(default_factory=list[str])

    def __post_init__(self) -> None:
        self.roots = [_real(r) for r in self.roots]
        self._patterns = [comparable(p.strip().strip("/")) for p in self.denylist if p.strip("/ ")]
        # A denylisted place is never granted, whoever named it (the config file's allow_paths).
        self.grants = [g for g in self.grants if self.denied_anywhere(g.path) is None]

    def resolve(
        self,
        cwd: Path,
        path: str,
        *,
        access: Access = "read",
        follow_last: bool = True,
        extra_read: Iterable[Path] = (),
    ) -> Path:
        """The absolute path a tool should use; raises PathRefused.

        `follow_last=False` resolves the parent only, so a symlink itself can be moved or
        deleted without touching what it points at."""
        _check_shape(path)
        lexical = Path(os.path.normpath(_real(cwd) / path))
        try:
            if follow_last and lexical.name:
                full = lexical.resolve()
            else:
                full = lexical.parent.resolve() / lexical.name if lexical.name else lexical
        except (OSError, RuntimeError, ValueError) as exc:
            raise PathRefused("INVALID_PATH", f"{path}: {_reason(exc)}") from None
        base = self._base(full, access, [_real(p) for p in extra_read])
        if base is None:
            raise PathRefused("OUTSIDE_ROOTS", self._outside(path, full, access))
        for candidate, where in ((full, base), (lexical, self._base(lexical, "read", []))):
            entry = self.denied(candidate, where)
            if entry is not None:
                raise PathRefused(
                    "PATH_DENIED", f"{path} matches the path denylist entry {entry!r}"
                )
        return full

    def guards(self, paths: Iterable[str]) -> bool:
        """Whether changing any of `paths` (absolute) changes a guarded directory: a path in
        one, or one holding one (a parent moved or deleted)."""
        guarded = [_real(g) for g in self.guarded]
        for p in map(Path, paths):
            if any(p.is_relative_to(g) or g.is_relative_to(p) for g in guarded):
                return True
        return False

    @property
    def denylist_patterns(self) -> tuple[str, ...]:
        """The denylist as names are compared with it (see `comparable`)."""
        return tuple(self._patterns)

    def root_of(self, path: Path) -> Path | None:
        """The innermost root holding `path`."""
        inside = [r for r in self.roots if path == r or path.is_relative_to(r)]
        return max(inside, key=lambda r: len(r.parts)) if inside else None

    def grant(self, grant: DirGrant) -> None:
        self.grants = [g for g in self.grants if g.path != grant.path] + [grant]
        if self.on_grant is not None:
            self.on_grant(grant)

    def denied_anywhere(self, path: Path) -> str | None:
        """The denylist entry matching any component of an absolute path (for a directory
        asked for: a denylisted place is never granted, wherever it is)."""
        for part in path.parts[1:]:
            for pattern in self._patterns:
                if fnmatch.fnmatchcase(comparable(part), pattern):
                    return pattern
        return None

    def denied(self, path: Path, base: Path | None = None) -> str | None:
        """The denylist entry matching any part of `path` below its root, or None."""
        base = base or self._base(path, "read", [])
        if base is None:
            return None
        try:
            parts = path.relative_to(base).parts
        except ValueError:
            return None
        for part in parts:
            name = comparable(part)
            for pattern in self._patterns:
                if fnmatch.fnmatchcase(name, pattern):
                    return pattern
        return None

    def _base(self, full: Path, access: Access, extra: list[Path]) -> Path | None:
        """The innermost root or grant holding `full` (the denylist applies below it)."""
        bases = [*self.roots, *(g.path for g in self.grants if _covers(g, access))]
        if access == "read":
            bases += [*extra, *(_real(r) for r in self.read_roots)]
        inside = [b for b in bases if full == b or full.is_relative_to(b)]
        return max(inside, key=lambda b: len(b.parts)) if inside else None

    def _outside(self, path: str, full: Path, access: Access) -> str:
        dirs = ", ".join(str(r) for r in self.roots)
        if access == "write" and self._base(full, "read", []) is not None:
            return (
                f"{path} is in a directory granted for reading only; ask the user for write "
                "access with request_directory_access (access: write)"
            )
        return (
            f"{path} is outside the session's directories ({dirs}); ask the user to open its "
            "directory with request_directory_access"
        )


def comparable(name: str) -> str:
    """A name as the denylist compares it: one Unicode spelling (NFC: `é` typed or decomposed,
    as macOS stores it), case folded."""
    return unicodedata.normalize("NFC", name).casefold()


def _covers(grant: DirGrant, access: Access) -> bool:
    return access == "read" or grant.access == "write"


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


def _check_shape(path: str) -> None:
    if not path:
        raise PathRefused("INVALID_PATH", "path must not be empty")
    if "\0" in path:
        raise PathRefused("INVALID_PATH", f"path contains a NUL byte: {path!r}")
    if len(path) > MAX_PATH_CHARS:
        raise PathRefused("INVALID_PATH", f"path is longer than {MAX_PATH_CHARS} characters")
    for part in Path(path).parts:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise PathRefused(
                "INVALID_PATH", f"a path component is longer than {MAX_NAME_BYTES} bytes"
            )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RuntimeError) or "loop" in str(exc).lower():
        return "a symlink loop"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)
