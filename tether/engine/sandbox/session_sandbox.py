"""A session's sandbox: the mechanism found for this machine, the session's private temporary
directory, and each command's confinement, computed when it starts (what is uncommitted changes
as the session works). Under bubblewrap, a command that needs placeholders (see placeholders.py)
gets a launcher that registers them and removes them when it ends.

A confined command's environment is built twice over: the launcher keeps only the variables
of the command environment (`engine/local/processes.py`, `env_allowlist.py`), whoever started it (an
editor's terminal starts it with the editor's whole environment), and the variables the call
sets are set inside the sandbox, by a confined `env`, so none of them (`LD_PRELOAD`, say)
reaches the launcher or the mechanism, which run unconfined."""

from __future__ import annotations

import itertools
import json
import os
import re
import secrets
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import anyio
import msgspec

from tether.engine.local import env_allowlist, reaper
from tether.engine.sandbox import placeholders, protect, session_cgroups, session_dirs
from tether.engine.sandbox.acts_later import acts_later
from tether.engine.sandbox.bwrap import bwrap_argv, plan_mounts
from tether.engine.sandbox.confinement import Confinement
from tether.engine.sandbox.detect import LAUNCHER, SandboxInfo
from tether.engine.sandbox.programs import program_files
from tether.engine.sandbox.seatbelt import seatbelt_argv
from tether.engine.vcs.repository import Repositories
from tether.errors import SandboxUnavailable
from tether.paths import data_dir

LIFETIME = Path(__file__).with_name("lifetime_exec.py")
_KINDS = ("sandboxed-", "unconfined-")  # the launchers' names
SECRETS_FRESH = 10.0  # seconds a secrets scan is reused
# Seconds a `git status` is reused: the plan's look serves the run that follows it at once.
WORK_FRESH = 1.0


class Scope(msgspec.Struct, frozen=True):
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
        info: SandboxInfo | Callable[[], SandboxInfo],
        *,
        hidden: Sequence[Path] = (),
        network: bool = False,
        base: Path | None = None,
        repositories: Repositories | None = None,
        registry: Path | None = None,
    ) -> None:
        """`info`: the mechanism, or how to find it (engine/sandbox/detect.py: a probe that
        runs programs, done when a command first needs it, on a thread: `ready`); `hidden`:
        paths no command may read (tether's home and config); `base`: where the private
        directory is made (default: the system's temporary directory);
        `repositories`: the session's, as found when it started (uncommitted work is what
        tether's git says about those, never about a `.git` that appeared since); `registry`:
        the placeholders' registry (default: in tether's data directory)."""
        self._info, self._find = (info, None) if isinstance(info, SandboxInfo) else (None, info)
        self.repositories = repositories if repositories is not None else Repositories()
        self._base = base
        self._registry = registry
        self._swept = False  # whether it registered placeholders (close sweeps them)
        self.network = network  # the session allows commands to use the network
        self._hidden = tuple(hidden)
        self._dir: Path | None = None
        self._numbers = itertools.count(1)  # names of launchers and policies (thread-safe)
        self._group: Path | None = None  # the session's cgroup, made with the first launcher
        self._no_group = False
        self._secrets: tuple[float, tuple[Path, ...], list[Path]] | None = None
        self._works: dict[Path, tuple[float, protect.Work]] = {}

    @property
    def info(self) -> SandboxInfo:
        if self._info is None:
            assert self._find is not None
            self._info = self._find()
        return self._info

    async def ready(self) -> SandboxInfo:
        """The mechanism, found on a thread if it is not known yet (the event loop never waits
        on the probe's programs)."""
        if self._info is None:
            return await anyio.to_thread.run_sync(lambda: self.info)
        return self._info

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
        await self.ready()
        if not self.confines:
            return f"no sandbox on this machine ({self.info.why})"
        for tree in scope.writable:
            work = await anyio.to_thread.run_sync(self._work, tree)
            if work.problem is not None:
                return f"uncommitted work cannot be protected: {work.problem}"
        return None

    async def wrap(
        self,
        argv: list[str],
        *,
        cwd: Path,
        scope: Scope,
        base: Mapping[str, str],
        env: Mapping[str, str],
    ) -> list[str]:
        """`argv` as the sandbox runs it: `[launcher, *argv]`, the launcher a one-use script
        in the private directory that starts the mechanism (so an editor's terminal shows a
        short command line) with the variables of `base` only (the command environment: start
        it with that and nothing more), and `env` (the call's own variables) set inside.
        SandboxUnavailable when it cannot be confined."""
        await self.ready()
        launcher = await anyio.to_thread.run_sync(self._prepare, scope, cwd, dict(base), dict(env))
        return [str(launcher), *argv]

    def _prepare(self, scope: Scope, cwd: Path, base: dict[str, str], env: dict[str, str]) -> Path:
        c = self._confinement(scope)
        if self.info.mechanism == "bubblewrap":
            return self._bubblewrap(c, cwd, base, _inside(env))
        return self._launcher([*self._prefix(c, cwd), *_inside(env)], base)

    def _bubblewrap(
        self, c: Confinement, cwd: Path, base: dict[str, str], inside: list[str]
    ) -> Path:
        """bubblewrap's launcher: one that looks after the placeholders when it mounts any."""
        assert self.info.program is not None
        mounts = plan_mounts(c)
        signals = self.info.tty_signals
        if not mounts.placeholders:
            argv = bwrap_argv(self.info.program, c, [], cwd, tty_signals=signals, mounts=mounts)
            return self._launcher([*argv, *inside], base)
        _can_place(mounts.placeholders)
        argv = bwrap_argv(
            self.info.program, c, [], cwd, tty_signals=signals, mounts=mounts, background=True
        )
        registry = self._registry or data_dir() / "placeholders"
        token = f"{os.getpid()}-{secrets.token_hex(8)}"
        run = placeholders.launcher(
            registry, token, mounts.placeholders, [*argv, *inside], tty=c.tty
        )
        try:
            placeholders.ready(registry)
            # first: a marker's launcher must exist (it empties itself when it starts)
            path = self._write_launcher(self._script(run, base, remove=False))
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

    async def unconfined(
        self, argv: list[str], *, base: Mapping[str, str], env: Mapping[str, str]
    ) -> list[str]:
        """`argv` outside the sandbox but still tied to tether (engine/sandbox/lifetime_exec.py:
        what it starts ends with it and with tether), through a one-use launcher like `wrap`'s,
        with the same environment; as it is where that launcher cannot run (not Linux)."""
        if not sys.platform.startswith("linux"):
            return [*_inside(dict(env)), *argv]
        prefix = [sys.executable, "-I", "-S", str(LIFETIME), "--owner", reaper.owner(), "--"]
        prefix += _inside(dict(env))
        launcher = await anyio.to_thread.run_sync(self._launcher, prefix, dict(base), "unconfined")
        return [str(launcher), *argv]

    def _launcher(self, prefix: list[str], base: dict[str, str], kind: str = "sandboxed") -> Path:
        """A one-use launcher that removes itself and becomes the sandbox around its arguments
        (`kind` names it: `sandboxed-N`, or `unconfined-N` for a command outside the sandbox,
        so a client that names a launcher by what it is tells the two apart)."""
        script = self._script(f'{shlex.join(prefix)} "$@"', base, remove=True)
        return self._write_launcher(script, kind)

    def _script(self, run: str, base: dict[str, str], *, remove: bool) -> str:
        """`#!/bin/sh` that (if `remove`) removes itself, joins the session's cgroup (where
        there is one) and execs `run` with no variable `base` does not hold (TERM aside: a
        PTY's own)."""
        keep = " ".join(_kept(name, base) for name in sorted({*base, "TERM"}))
        join = session_cgroups.join_line(self._cgroup())
        rm = f'{_system("/bin/rm", "rm")} -f -- "$0"\n' if remove else ""
        return f"#!/bin/sh\n{rm}{join}exec {_system('/usr/bin/env', 'env')} -i {keep} {run}\n"

    def _write_launcher(self, script: str, kind: str = "sandboxed") -> Path:
        """A one-use launcher in the private directory, whole once it has its name (those
        that emptied themselves when they started go)."""
        run = self._private() / "run"
        with os.scandir(run) as found:
            for old in found:
                if old.name.startswith(_KINDS) and old.stat().st_size == 0:
                    os.unlink(old.path)
        number = next(self._numbers)
        draft = run / f".draft-{number}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(script)
        path = run / f"{kind}-{number}"
        os.rename(draft, path)
        return path

    def close(self) -> None:
        """Kill what is left in the session's cgroup; remove the private directory (its temp
        files go with the session), then the placeholders no command uses any more (those of
        commands that were killed, or never started: their launchers went with the
        directory)."""
        if self._group is not None:
            session_cgroups.end(self._group)
            self._group = None
        if self._dir is not None:
            session_dirs.remove(self._dir)
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
            unset_env=tuple(sorted(env_allowlist.current().secrets)),  # (gone already)
        )

    def _work(self, tree: Path) -> protect.Work:
        now = time.monotonic()
        cached = self._works.get(tree)
        if cached is not None and now - cached[0] < WORK_FRESH:
            return cached[1]
        work = protect.uncommitted_work(tree, self.repositories.find(tree))
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
            self._dir = session_dirs.make(self._base)
        return self._dir

    def _cgroup(self) -> Path | None:
        if self._group is None and not self._no_group:
            self._group = session_cgroups.make()
            self._no_group = self._group is None  # looked once: none can be made
        return self._group

    def _policy_file(self, c: Confinement) -> Path:
        path = self._private() / "policies" / f"{next(self._numbers)}.json"
        policy = {
            "writable": [str(p) for p in (*c.writable, c.tmp)],
            "protected": [str(p) for p in c.protected],
            "hidden": [str(p) for p in c.hidden],
            "tmp": str(c.tmp),
            "owner": reaper.owner(),  # the launcher ends the command when this tether ends
            "network": c.network,
            "tty": c.tty,
            "unset_env": list(c.unset_env),
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(policy, f)
        return path


def _system(path: str, name: str) -> str:
    """The system's `env` or `rm`, never one a PATH finds first (the launcher runs unconfined);
    looked up when used, not at import (a warm worker's PATH is its launcher's, not its
    server's)."""
    return path if os.path.exists(path) else shutil.which(name) or name


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _inside(env: dict[str, str]) -> list[str]:
    """The call's own variables, set by a confined `env` after the mechanism (never on the
    launcher, which runs unconfined)."""
    if not env:
        return []
    return [_system("/usr/bin/env", "env"), "--", *(f"{k}={v}" for k, v in env.items())]


def _kept(name: str, base: dict[str, str]) -> str:
    """`${NAME+"NAME=$NAME"}`: the variable as the launcher was given it, when it was (a
    name the shell cannot spell is given as `base` holds it)."""
    if _NAME.match(name):
        return f'${{{name}+"{name}=${name}"}}'
    return shlex.quote(f"{name}={base.get(name, '')}")


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
