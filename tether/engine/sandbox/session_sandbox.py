"""A session's sandbox: the mechanism found for this machine, the session's private temporary
directory, and each command's confinement, computed when it starts (what is uncommitted changes
as the session works). Under bubblewrap, a command that needs placeholders (see placeholders.py)
gets a launcher that registers them and removes them when it ends."""

from __future__ import annotations

import itertools
import json
import os
import secrets
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from tether.engine.sandbox import placeholders, protect
from tether.engine.sandbox.acts_later import acts_later
from tether.engine.sandbox.bwrap import bwrap_argv, plan_mounts
from tether.engine.sandbox.confinement import PROVIDER_KEYS, Confinement
from tether.engine.sandbox.detect import LAUNCHER, SandboxInfo
from tether.engine.sandbox.programs import program_files
from tether.engine.sandbox.seatbelt import seatbelt_argv
from tether.errors import TetherError
from tether.paths import data_dir

SECRETS_FRESH = 10.0  # seconds a secrets scan is reused
# Seconds a `git status` is reused: the plan's look serves the run that follows it at once.
WORK_FRESH = 1.0


@dataclass(frozen=True)
class Scope:
    """Where one command may work: the trees it may write (roots, write grants), the path
    denylist, the denylisted program names, whether it runs on a PTY, and directories inside
    the trees it must not change or make (the skills roots: a change there is the user's to
    allow)."""

    writable: tuple[Path, ...]
    path_denylist: tuple[str, ...]
    programs: tuple[str, ...] = ()
    tty: bool = False
    guarded: tuple[Path, ...] = ()


class Sandbox:
    def __init__(
        self,
        info: SandboxInfo,
        *,
        hidden: Sequence[Path] = (),
        network: bool = False,
        base: Path | None = None,
        registry: Path | None = None,
    ) -> None:
        """`hidden`: paths no command may read (tether's home and config); `base`: where the
        private directory is made (default: the system's temporary directory); `registry`:
        the placeholders' registry (default: in tether's data directory)."""
        self.info = info
        self._base = base
        self._registry = registry
        self._swept = False  # whether it registered placeholders (close sweeps them)
        self.network = network  # the session allows commands to use the network
        self._hidden = tuple(hidden)
        self._dir: Path | None = None
        self._numbers = itertools.count(1)  # names of launchers and policies (thread-safe)
        self._secrets: tuple[float, tuple[Path, ...], list[Path]] | None = None
        self._works: dict[Path, tuple[float, protect.Work]] = {}

    @property
    def confines(self) -> bool:
        return self.info.confines

    @property
    def tmp(self) -> Path:
        return self._private() / "tmp"

    async def problem(self, scope: Scope) -> str | None:
        """Why commands in `scope` cannot run confined as promised (None: they can): no
        sandbox, or uncommitted work too large to protect (they then run confined without
        that protection, and ask first)."""
        if not self.confines:
            return f"no sandbox on this machine ({self.info.why})"
        for tree in scope.writable:
            work = await anyio.to_thread.run_sync(self._work, tree)
            if work.problem is not None:
                return f"uncommitted work cannot be protected: {work.problem}"
        return None

    async def wrap(self, argv: list[str], *, cwd: Path, scope: Scope) -> list[str]:
        """`argv` as the sandbox runs it: `[launcher, *argv]`, the launcher a one-use script
        in the private directory that starts the mechanism (so an editor's terminal shows a
        short command line). SandboxUnavailable when it cannot be confined."""
        launcher = await anyio.to_thread.run_sync(self._prepare, scope, cwd)
        return [str(launcher), *argv]

    def _prepare(self, scope: Scope, cwd: Path) -> Path:
        c = self._confinement(scope)
        if self.info.mechanism == "bubblewrap":
            return self._bubblewrap(c, cwd)
        return self._launcher(self._prefix(c, cwd))

    def _bubblewrap(self, c: Confinement, cwd: Path) -> Path:
        """bubblewrap's launcher: one that looks after the placeholders when it mounts any."""
        assert self.info.program is not None
        mounts = plan_mounts(c)
        signals = self.info.tty_signals
        if not mounts.placeholders:
            argv = bwrap_argv(self.info.program, c, [], cwd, tty_signals=signals, mounts=mounts)
            return self._launcher(argv)
        _can_place(mounts.placeholders)
        argv = bwrap_argv(
            self.info.program, c, [], cwd, tty_signals=signals, mounts=mounts, background=True
        )
        registry = self._registry or data_dir() / "placeholders"
        token = f"{os.getpid()}-{secrets.token_hex(8)}"
        script = placeholders.launcher(registry, token, mounts.placeholders, argv, tty=c.tty)
        try:
            placeholders.ready(registry)
            path = self._write_launcher(script)  # first: a marker's launcher must exist
            placeholders.register(registry, token, path, mounts.placeholders)
        except OSError as exc:
            raise SandboxUnavailable(f"cannot keep the sandbox's placeholders: {exc}") from None
        self._swept = True
        return path

    def _prefix(self, c: Confinement, cwd: Path) -> list[str]:
        """The mechanism's command line up to the program (bubblewrap: see _bubblewrap)."""
        mechanism = self.info.mechanism
        if mechanism == "landlock":
            return [sys.executable, "-I", "-S", str(LAUNCHER), str(self._policy_file(c)), "--"]
        if mechanism == "seatbelt":
            return seatbelt_argv(c, [])
        raise SandboxUnavailable(f"no sandbox on this machine ({self.info.why})")

    def _launcher(self, prefix: list[str]) -> Path:
        """`#!/bin/sh` that removes itself and becomes the sandbox around its arguments."""
        return self._write_launcher(f'#!/bin/sh\nrm -f -- "$0"\nexec {shlex.join(prefix)} "$@"\n')

    def _write_launcher(self, script: str) -> Path:
        """A one-use launcher in the private directory, whole once it has its name (those
        that emptied themselves when they started go)."""
        run = self._private() / "run"
        with os.scandir(run) as found:
            for old in found:
                if old.name.startswith("sandboxed-") and old.stat().st_size == 0:
                    os.unlink(old.path)
        number = next(self._numbers)
        draft = run / f".draft-{number}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(script)
        path = run / f"sandboxed-{number}"
        os.rename(draft, path)
        return path

    def close(self) -> None:
        """Remove the private directory (its temp files go with the session), then the
        placeholders no command uses any more (those of commands that were killed, or never
        started: their launchers went with the directory)."""
        if self._dir is not None:
            _make_removable(self._dir)
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        if self._swept:
            try:
                placeholders.sweep(self._registry or data_dir() / "placeholders")
            except OSError:
                pass

    # --- building a confinement, on a worker thread -------------------------------------

    def _confinement(self, scope: Scope) -> Confinement:
        protected: list[Path] = []
        for tree in scope.writable:
            protected += self._work(tree).paths  # all of it, or the repository
        protected += _acting_later(scope)
        hidden = [*self._hidden, *self._secrets_of(scope), *program_files(scope.programs)]
        # A mask over a writable tree (or above it) would hide the project itself; one inside
        # another mask is hidden already.
        hidden = [h for h in hidden if not any(_holds(h, tree) for tree in scope.writable)]
        hidden = [h for h in hidden if not any(o != h and _holds(o, h) for o in hidden)]
        private = self._private()
        return Confinement(
            writable=scope.writable,
            tmp=private / "tmp",
            protected=tuple(dict.fromkeys(protected)),
            hidden=tuple(dict.fromkeys(hidden)),
            network=self.network,
            tty=scope.tty,
            masks=(private / "deny-file", private / "deny-dir"),
            placeholder=private / "empty-dir",
            unset_env=PROVIDER_KEYS,
        )

    def _work(self, tree: Path) -> protect.Work:
        now = time.monotonic()
        cached = self._works.get(tree)
        if cached is not None and now - cached[0] < WORK_FRESH:
            return cached[1]
        work = protect.uncommitted_work(tree)
        self._works[tree] = (now, work)
        return work

    def _secrets_of(self, scope: Scope) -> list[Path]:
        now = time.monotonic()
        cached = self._secrets
        if cached is not None and cached[1] == scope.writable and now - cached[0] < SECRETS_FRESH:
            return cached[2]
        home = Path(os.path.expanduser("~"))
        found = protect.secrets(scope.writable, scope.path_denylist, home)
        self._secrets = (now, scope.writable, found)
        return found

    def _private(self) -> Path:
        if self._dir is None:
            base = Path(tempfile.mkdtemp(prefix="tether-sandbox-", dir=self._base))
            (base / "tmp").mkdir(mode=0o700)
            (base / "policies").mkdir(mode=0o700)
            (base / "run").mkdir(mode=0o700)
            deny_file, deny_dir = base / "deny-file", base / "deny-dir"
            deny_file.touch(mode=0o000)
            deny_dir.mkdir(mode=0o000)
            (base / "empty-dir").mkdir(mode=0o555)
            os.chmod(deny_file, 0o000)
            os.chmod(deny_dir, 0o000)
            self._dir = base
        return self._dir

    def _policy_file(self, c: Confinement) -> Path:
        path = self._private() / "policies" / f"{next(self._numbers)}.json"
        policy = {
            "writable": [str(p) for p in (*c.writable, c.tmp)],
            "protected": [str(p) for p in c.protected],
            "hidden": [str(p) for p in c.hidden],
            "tmp": str(c.tmp),
            "network": c.network,
            "tty": c.tty,
            "unset_env": list(c.unset_env),
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(policy, f)
        return path


class SandboxUnavailable(TetherError):
    """A command cannot be confined as promised; it must not run confined-but-leaky."""

    def __init__(self, message: str) -> None:
        super().__init__("SANDBOX_UNAVAILABLE", message)


def _can_place(places: tuple[Path, ...]) -> None:
    """SandboxUnavailable when the launcher could not look after these placeholders."""
    missing = placeholders.missing_tools()
    if missing:
        raise SandboxUnavailable(
            f"the sandbox needs {' and '.join(missing)} (util-linux) to protect paths that do "
            "not exist yet"
        )
    if any("\n" in str(p) for p in places):  # (the registry is line-based)
        raise SandboxUnavailable("a path to protect has a line break in its name")


def _holds(outer: Path, inner: Path) -> bool:
    return inner == outer or inner.is_relative_to(outer)


def _acting_later(scope: Scope) -> list[Path]:
    """What acts later in the writable trees (and the skills roots there), whether it exists
    or not; where a link leads one elsewhere in the trees, its target too."""
    found = [*acts_later(scope.writable), *scope.guarded]
    for path in list(found):
        real = Path(os.path.realpath(path))
        if real != path and any(_holds(tree, real) for tree in scope.writable):
            found.append(real)
    return found


def _make_removable(base: Path) -> None:
    for name in ("deny-file", "deny-dir", "empty-dir"):
        try:
            os.chmod(base / name, 0o700)
        except OSError:
            pass
