"""tether's own git, hardened: every git tether runs for itself (the project snapshot, the look
before a confined command, the vcs tools) runs here, so that no repository, global, system or
environment config can make it run a program.

What it takes away, and how (checked against real git in tests/sandbox/test_git_runner.py):
- tether's own environment: git gets an environment built from an allowlist (`PATH` without
  relative entries or entries inside the session's trees, `HOME`, `XDG_CONFIG_HOME`, `TZ`, ...), so
  no `GIT_*` variable of tether's (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`, `GIT_DIR`,
  `GIT_EXTERNAL_DIFF`, `GIT_SSH_COMMAND`, `GIT_ASKPASS`, `GIT_PAGER`, ...) reaches it;
- system config and attributes (`GIT_CONFIG_NOSYSTEM`, `GIT_ATTR_NOSYSTEM`); the user's global
  config is read, its dangerous keys overridden like the repository's;
- the programs config can name: fixed overrides (`OVERRIDES`, passed through
  `GIT_CONFIG_COUNT`, which beats every config file) for fsmonitor, hooks, pager, editors, ssh,
  askpass, credential helpers, gpg, proxies, pack hooks; and for every filter driver the
  effective config defines (includes followed), its clean, smudge and process commands emptied
  (`git config -z --list` first: reading config runs nothing);
- the network: `GIT_ALLOW_PROTOCOL` set empty allows no transport, whatever `protocol.*.allow`
  says (a partial clone's lazy fetch would run ssh, proxies, remote helpers, credential helpers);
- diff drivers (`--no-ext-diff`, `--no-textconv`), signatures (`--no-show-signature`), child
  gits in submodules (`--ignore-submodules=dirty`: a submodule's own config is not looked at),
  pagers (`--no-pager`), index writes (`--no-optional-locks`), prompts, and other locales
  (`LC_ALL=C`: output is parsed).
Only the read-only subcommands in `SUBCOMMANDS` run (no merge, checkout or fetch: their drivers
and hooks never come into play). The git dir and work tree are always given (`--git-dir`,
`--work-tree`), never discovered, except by `locate`, which a session calls once per root
(engine/vcs/repository.py pins what it found).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import anyio
import anyio.abc
import msgspec

from tether.errors import GitRefused

# The subcommands tether runs for itself, each with the options it always gets.
SUBCOMMANDS: dict[str, tuple[str, ...]] = {
    "rev-parse": (),
    "status": ("--ignore-submodules=dirty",),
    "diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"),
    "log": ("--no-ext-diff", "--no-textconv", "--no-show-signature"),
    "branch": (),
    "ls-files": (),
    "config": (),
}
OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.untrackedCache", "false"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("credential.helper", ""),
    ("core.gitProxy", "none"),
    ("core.alternateRefsCommand", ""),
    ("uploadpack.packObjectsHook", ""),
    ("protocol.allow", "never"),
    ("gpg.program", ""),
    ("gpg.openpgp.program", ""),
    ("gpg.x509.program", ""),
    ("gpg.ssh.program", ""),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("log.showSignature", "false"),
    ("diff.external", ""),
    ("diff.submodule", "short"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("color.ui", "false"),
    ("column.ui", "never"),
)
# Options that would undo what SUBCOMMANDS adds, write a file, or read one named in them.
UNDOING = (
    "--ext-diff", "--textconv", "--show-signature", "--ignore-submodules", "--submodule",
    "--recurse-submodules", "--output", "-O", "--open-files-in-pager", "--paginate",
)  # fmt: skip
LISTING = {"-z", "--null", "--list", "-l"}  # `git config` only lists
# Per filter driver the config defines: what runs it, emptied (git then applies no filter).
FILTER_KEYS = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
MAX_DRIVERS = 500  # filter drivers one config may define (more: git does not run)
ERR_MAX = 64 * 1024  # stderr bytes kept
KEPT_ENV = ("HOME", "XDG_CONFIG_HOME", "TZ", "TMPDIR", "SYSTEMROOT", "USERPROFILE")


class GitOutput(msgspec.Struct, frozen=True):
    code: int
    stdout: bytes
    stderr: bytes
    truncated: bool = False  # stdout was cut at the limit the caller gave

    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    def error(self) -> str:
        return self.stderr.decode("utf-8", "replace").strip()


def locate(root: Path, timeout: float, avoid: Sequence[Path] = ()) -> tuple[Path, Path] | None:
    """The work tree and absolute git dir of the repository `root` lies in (git's own
    discovery, hardened like every run); None outside one, or when git cannot say. `avoid`:
    trees git must not be taken from (`root` too: see `_search_path`)."""
    path = _search_path((root, *avoid))
    argv = [_program(path), *_GLOBAL, "rev-parse", "--show-toplevel", "--absolute-git-dir"]
    done = _run_sync(argv, root, _environment(path, ()), timeout, "rev-parse")
    lines = done.stdout.decode("utf-8", "surrogateescape").splitlines()
    if done.code != 0 or len(lines) < 2:
        return None
    return Path(lines[0]).resolve(), Path(lines[1]).resolve()


def run(
    git_dir: Path,
    work_tree: Path,
    args: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    avoid: Sequence[Path] = (),
) -> GitOutput:
    """`git <args>` on this repository, hardened (from a worker thread: it blocks)."""
    path = _search_path((work_tree, cwd, *avoid))
    head = _head(git_dir, work_tree, path)
    argv = [*head, *_subcommand(args)]
    listing = _run_sync([*head, *_LIST], cwd, _environment(path, ()), timeout, "config")
    if listing.code != 0:
        return listing
    env = _environment(path, _driver_overrides(listing.stdout))
    return _run_sync(argv, cwd, env, timeout, args[0])


async def arun(
    git_dir: Path,
    work_tree: Path,
    args: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    limit: int | None = None,
    avoid: Sequence[Path] = (),
) -> GitOutput:
    """`git <args>` on this repository, hardened; `limit`: stdout bytes kept (the process is
    stopped past it)."""
    path = _search_path((work_tree, cwd, *avoid))
    head = _head(git_dir, work_tree, path)
    argv = [*head, *_subcommand(args)]
    with anyio.fail_after(timeout):
        listing = await _run_async([*head, *_LIST], cwd, _environment(path, ()), None)
        if listing.code != 0:
            return listing
        env = _environment(path, _driver_overrides(listing.stdout))
        return await _run_async(argv, cwd, env, limit)


# --- the command line and the environment --------------------------------------------------

_GLOBAL = ("--no-pager", "--no-optional-locks")
_LIST = ("config", "-z", "--list")


def _head(git_dir: Path, work_tree: Path, path: str) -> list[str]:
    return [_program(path), *_GLOBAL, f"--git-dir={git_dir}", f"--work-tree={work_tree}"]


def _subcommand(args: Sequence[str]) -> list[str]:
    """The subcommand with the options it always gets; GitRefused for anything that is not
    reading, or that would undo those options."""
    if not args or args[0] not in SUBCOMMANDS:
        raise GitRefused(f"tether's own git runs no `git {' '.join(args[:1])}`")
    name, rest = args[0], list(args[1:])
    options = rest[: rest.index("--")] if "--" in rest else rest
    if any(o.startswith(UNDOING) for o in options) or not _only_reads(name, rest):
        raise GitRefused(f"tether's own git does not run `git {shlex.join(args)}`")
    return [name, *SUBCOMMANDS[name], *rest]


def _only_reads(name: str, rest: list[str]) -> bool:
    """`git config` and `git branch` also write; here they only list."""
    if name == "config":
        return bool(rest) and set(rest) <= LISTING and bool({"--list", "-l"} & set(rest))
    if name == "branch":
        return rest[:1] in (["--list"], ["--show-current"])
    return True


def _program(path: str) -> str:
    """git, found on a PATH that cannot lead into the session's trees (`_search_path`: a `git`
    planted in the project's `.venv/bin` must not be what runs)."""
    found = shutil.which("git", path=path)
    if found is None:
        raise FileNotFoundError("git")
    return found


def _search_path(trees: Sequence[Path]) -> str:
    """tether's PATH without relative entries and entries inside `trees`; found once for a
    run, which finds git and runs it (twice: its config listed first) on it."""
    kept: list[str] = []
    resolved = [t.resolve() for t in trees]
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = Path(entry).resolve()
        if not any(real == t or real.is_relative_to(t) for t in resolved):
            kept.append(entry)
    return os.pathsep.join(kept)


def _environment(path: str, overrides: Sequence[tuple[str, str]]) -> dict[str, str]:
    env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
    env.update(
        PATH=path,
        LC_ALL="C",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_ALLOW_PROTOCOL="",  # an empty list: no transport at all
    )
    pairs = [*OVERRIDES, *overrides]
    env["GIT_CONFIG_COUNT"] = str(len(pairs))
    for i, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def _driver_overrides(listing: bytes) -> list[tuple[str, str]]:
    """For every filter driver `git config -z --list` shows (`filter.<name>.<key>`), the
    overrides that leave it nothing to run."""
    names: dict[bytes, None] = {}
    for entry in listing.split(b"\0"):
        key = entry.split(b"\n", 1)[0]
        section, _, rest = key.partition(b".")
        name, dot, _ = rest.rpartition(b".")
        if section.lower() == b"filter" and dot:
            names[name] = None
    if len(names) > MAX_DRIVERS:
        raise GitRefused(f"the git config defines over {MAX_DRIVERS} filter drivers")
    found: list[tuple[str, str]] = []
    for raw in names:
        name = raw.decode("utf-8", "surrogateescape")
        found += [(f"filter.{name}.{key}", value) for key, value in FILTER_KEYS]
    return found


# --- running ---------------------------------------------------------------------------------


def _run_sync(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float, what: str
) -> GitOutput:
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise TimeoutError(f"git {what} took over {timeout:g} s") from exc
    return GitOutput(done.returncode, done.stdout, done.stderr)


async def _run_async(
    argv: list[str], cwd: Path, env: dict[str, str], limit: int | None
) -> GitOutput:
    async with await anyio.open_process(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL
    ) as process:
        stdout, stderr = process.stdout, process.stderr
        assert stdout is not None and stderr is not None
        out, err = bytearray(), bytearray()

        async def drain_err() -> None:
            async for chunk in stderr:
                err.extend(chunk[: ERR_MAX - len(err)])

        async def read_out() -> bool:
            """Whether stdout went past the limit (the rest is not read)."""
            async for chunk in stdout:
                out.extend(chunk)
                if limit is not None and len(out) > limit:
                    return True
            return False

        code, truncated = -1, False
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain_err)
                truncated = await read_out()
                if truncated:
                    _kill(process)
                code = await process.wait()
        except BaseException:
            _kill(process)
            raise
    return GitOutput(code, bytes(out[:limit] if truncated else out), bytes(err), truncated)


def _kill(process: anyio.abc.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.kill()
