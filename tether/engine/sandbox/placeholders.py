"""Placeholders: the empty directories bubblewrap mounts read-only where a protected path does
not exist yet (a mount needs a mount point, so bubblewrap makes one on the host). They go again
as soon as no sandbox uses them, and never take anything of the user's with them.

The registry, in tether's data directory (hidden from every confined command), holds a file per
place (`<entry>.p`: its path) and a marker per launcher (`<token>.m`: its launcher's file, the
entries it uses, then `pid N` once it runs). A path is a placeholder of tether's while a marker
lists it. A launcher is alive while it is pending (its file is whole: it empties it when it
starts) or its process lives. tether registers a command's placeholders when it prepares the
command (the places missing, and those a live marker lists; one that stands there unlisted, an
empty directory of the user's, is not registered, so never removed). The launcher runs the
sandbox, then removes what no live launcher lists any more with rmdir, which removes an empty
directory and nothing else. Registration and removal hold one lock (flock on `.lock`):
removing a mount point on the host detaches the mount in every other mount namespace, so a
placeholder must never go between another command's registration and its end. What a launcher
that died left (SIGKILL, a killed tether) goes at the next registration and when a session's
sandbox closes; a place no live launcher lists is then forgotten (a placeholder the user put
something in is the user's from then on).

The launcher needs util-linux's setpriv(1) and flock(1): `setpriv --pdeathsig KILL` makes it die
with its parent, as bubblewrap dies with the launcher, so a sandbox still never outlives tether.
Besides the sandbox it starts three programs (setpriv, and flock and rmdir at the end); the
shell's builtins do the rest.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shlex
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

LOCK = ".lock"
TOOLS = ("flock", "setpriv")


def entry(path: Path) -> str:
    """The registry entry of a placeholder at `path`."""
    return hashlib.sha256(os.fsencode(path)).hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def tools() -> dict[str, str]:
    """Where flock and setpriv are (the launcher names them whole: an editor's terminal may
    run it with another PATH)."""
    return {t: found for t in TOOLS if (found := shutil.which(t)) is not None}


def missing_tools() -> tuple[str, ...]:
    return tuple(t for t in TOOLS if t not in tools())


def ready(registry: Path) -> None:
    """Make the registry (private to this user); OSError when it is not ours to use."""
    registry.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(registry)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise OSError(f"{registry} is not a directory of this user's")
    (registry / LOCK).touch(mode=0o600)


def register(registry: Path, token: str, launcher: Path, places: Sequence[Path]) -> None:
    """Mark `places` used by the launcher at `launcher` (swept first): each that is missing,
    or that a live launcher lists; not one standing there unlisted."""
    with _locked(registry):
        listed = _sweep(registry)
        mine: list[str] = []
        for place in places:
            name = entry(place)
            if name in listed or not os.path.lexists(place):
                mine.append(name)
                if not (registry / f"{name}.p").exists():
                    (registry / f"{name}.p").write_bytes(os.fsencode(place))
        text = "\n".join([str(launcher), *mine]) + "\n"
        (registry / f"{token}.m").write_text(text, encoding="utf-8")


def sweep(registry: Path) -> int:
    """Remove what dead launchers alone listed, and their markers; how many markers went."""
    if not registry.is_dir():
        return 0
    with _locked(registry):
        before = len(list(registry.glob("*.m")))
        _sweep(registry)
        return before - len(list(registry.glob("*.m")))


@contextmanager
def _locked(registry: Path) -> Iterator[None]:
    fd = os.open(registry / LOCK, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _sweep(registry: Path) -> set[str]:
    """(Locked.) The entries live launchers list; dead launchers' markers go, and the
    placeholders only they listed (rmdir: an empty directory or nothing)."""
    live: set[str] = set()
    dead: set[str] = set()
    for marker in registry.glob("*.m"):
        alive, entries = _scan(marker)
        if alive:
            live |= entries
        else:
            dead |= entries
            marker.unlink(missing_ok=True)
    for name in dead - live:
        _rmdir(registry / f"{name}.p")
    for place in registry.glob("*.p"):
        if place.stem not in live:
            place.unlink(missing_ok=True)  # gone, or the user's now (it holds something)
    return live


def _scan(marker: Path) -> tuple[bool, set[str]]:
    """Whether the marker's launcher is alive, and the entries it lists."""
    try:
        lines = marker.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False, set()
    if not lines:
        return False, set()  # emptied: its launcher ended
    pids = [line[4:] for line in lines if line.startswith("pid ")]
    entries = {line for line in lines[1:] if not line.startswith("pid ")}
    if pids:
        return _alive(pids[-1]), entries
    try:
        return os.stat(lines[0]).st_size > 0, entries  # pending: its launcher not run yet
    except OSError:
        return False, entries


def _alive(pid: str) -> bool:
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _rmdir(place: Path) -> None:
    """rmdir the placeholder at the path `place` holds: an empty directory, or nothing."""
    try:
        where = Path(os.fsdecode(place.read_bytes()))
        if where.is_absolute():
            os.rmdir(where)
    except OSError:
        pass


def launcher(
    registry: Path, token: str, places: Sequence[Path], prefix: list[str], *, tty: bool
) -> str:
    """The launcher's command line (a shell line run by the one-use launcher script, `$0`
    being that script) of a command whose placeholders are registered under `token`: it
    runs the sandbox (`prefix` and the script's arguments) as its child, removes what no live
    launcher lists when it ends, and ends as the sandbox did (its exit code, or the signal that
    stopped the launcher, which it passes on).

    The sandbox runs in the background so that a signal reaches the launcher's trap at once
    (a foreground child would hold it until it ended); its stdin is kept (a background job's
    would be /dev/null) and the program gets SIGINT and SIGQUIT back (the bubblewrap command
    line restores them)."""
    cases = " ".join(f"{entry(p)}) p={shlex.quote(str(p))};;" for p in places)
    found = tools()
    body = "\n".join(
        [
            f"R={shlex.quote(str(registry))} M={shlex.quote(str(registry / f'{token}.m'))}",
            f"F={shlex.quote(found['flock'])}",
            f'_path() {{ case $1 in {cases} *) read -r p < "$R/$1.p";; esac; }}',
            _FUNCTIONS,
            # alive by its process from now on, no longer by its file (pending)
            'printf "pid %s\\n" $$ >> "$M" && : > "$1" || _fail',
            "shift",
            "got= sig= pid=",
            *(["trap '' INT QUIT TSTP"] if tty else []),  # for the program, not the sandbox
            """trap 'got=TERM sig=1; kill -TERM "$pid" 2>/dev/null' TERM""",
            """trap 'got=HUP sig=1; kill -HUP "$pid" 2>/dev/null' HUP""",
            "exec 8<&0",
            f'{shlex.join(prefix)} "$@" 0<&8 8<&- &',
            "pid=$!",
            "exec 8<&- 2>/dev/null",  # (the shell would say how its job ended)
            'wait "$pid"; rc=$?',
            # a trap cut the wait short: wait again for the sandbox's own end
            'while [ -n "$sig" ]; do sig=; wait "$pid"; r=$?; [ "$r" = 127 ] && break; rc=$r; done',
            "trap '' HUP TERM",
            "_end",
            'if [ -n "$got" ]; then trap - "$got"; kill -"$got" $$; fi',
            'exit "$rc"',
        ]
    )
    setpriv = shlex.quote(found["setpriv"])
    return f'{setpriv} --pdeathsig KILL /bin/sh -c {shlex.quote(body)} sandboxed "$0" "$@"'


# `_scan MARKER`: its entries, and whether its launcher lives (by its process once it runs,
# else by its file, which it empties when it starts). `_end`, under the lock: this launcher's
# marker is emptied (ended: the next sweep removes it); every placeholder that it or a dead
# launcher lists and no live one does goes (rmdir: only empty directories), and so do dead
# launchers' markers (rm: a program more, only when one died).
_FUNCTIONS = """\
_fail() {
  echo "tether sandbox: cannot use its placeholders in $R; the command did not run" >&2
  exit 126
}
_scan() {
  entries= pid=
  { read -r file
    while read -r line; do
      case $line in "pid "*) pid=${line#pid };; *) entries="$entries $line";; esac
    done; } < "$1"
  if [ -n "$pid" ]; then kill -0 "$pid" 2>/dev/null; else [ -s "$file" ]; fi
}
_end() {
  exec 9>>"$R/.lock" && "$F" 9 || return
  _scan "$M"; left=$entries
  : > "$M"
  used= dead=
  for m in "$R"/*.m; do
    [ -s "$m" ] || continue
    if _scan "$m"; then used="$used$entries"; else left="$left$entries" dead="$dead ${m##*/}"; fi
  done
  set --
  for e in $left; do
    case "$used " in *" $e "*) ;; *) _path "$e" && set -- "$@" "$p";; esac
  done
  [ $# = 0 ] || rmdir -- "$@" 2>/dev/null
  set --
  for m in $dead; do set -- "$@" "$R/$m"; done
  [ $# = 0 ] || rm -f -- "$@"
  exec 9>&-
}"""
