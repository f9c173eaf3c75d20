"""Placeholders: the empty directories bubblewrap mounts read-only where a protected path does
not exist yet (a mount needs a mount point, so bubblewrap makes one on the host). They go again
as soon as no sandbox uses them, and never take anything of the user's with them.

The registry, in tether's data directory (hidden from every confined command), holds a file per
placeholder place (`<entry>.p`: its path) and a marker per launcher (`<pid>.m`: the entries it
uses). A path is a placeholder of tether's while some marker lists its entry. A launcher (a
shell script) registers before its sandbox starts (the places missing, and those another
marker lists), runs it, then drops its marker; a placeholder that no live launcher lists any
more is removed with rmdir, which removes an empty directory and nothing else. Both steps hold
one lock (flock on `.lock`): removing a mount point on the host detaches the mount in every
other mount namespace, so a placeholder must never go between another sandbox's registration
and its end. A path that stood there unlisted (an empty directory of the user's) is never
registered, so never removed. What launchers that died left (SIGKILL, a killed tether) goes at
the next launcher's end, and when a session's sandbox starts and closes.

The launcher needs util-linux's flock(1) and setpriv(1): `setpriv --pdeathsig KILL` makes it die
with its parent, as bubblewrap dies with the launcher, so a sandbox still never outlives tether.
Besides bubblewrap it starts four programs (rm, setpriv, flock, then flock and rmdir at the
end); the shell's builtins do the rest.
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
def missing_tools() -> tuple[str, ...]:
    return tuple(t for t in TOOLS if shutil.which(t) is None)


def ready(registry: Path) -> None:
    """Make the registry (private to this user); OSError when it is not ours to use."""
    registry.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(registry)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise OSError(f"{registry} is not a directory of this user's")
    (registry / LOCK).touch(mode=0o600)


def sweep(registry: Path) -> int:
    """Remove the placeholders only dead launchers listed, their markers, and the places no
    marker lists and nothing stands at; how many placeholders went."""
    if not registry.is_dir():
        return 0
    with _locked(registry):
        live: set[str] = set()
        dead: set[str] = set()
        for marker in registry.glob("*.m"):
            entries = set(marker.read_text(errors="replace").split())
            if entries and _alive(marker.stem):
                live |= entries
            else:  # dead, or ended (its marker emptied)
                dead |= entries
                marker.unlink(missing_ok=True)
        removed = sum(_rmdir(registry / f"{e}.p") for e in dead - live)
        for place in registry.glob("*.p"):
            if place.stem not in live and not os.path.lexists(_where(place) or "/"):
                place.unlink(missing_ok=True)
        return removed


@contextmanager
def _locked(registry: Path) -> Iterator[None]:
    fd = os.open(registry / LOCK, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


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


def _where(place: Path) -> Path | None:
    try:
        where = Path(os.fsdecode(place.read_bytes()))
    except OSError:
        return None
    return where if where.is_absolute() else None


def _rmdir(place: Path) -> int:
    """rmdir the placeholder at the path `place` holds: an empty directory, or nothing."""
    where = _where(place)
    if where is None:
        return 0
    try:
        os.rmdir(where)
    except OSError:
        return 0
    return 1


def launcher(registry: Path, placeholders: Sequence[Path], prefix: list[str], tty: bool) -> str:
    """A launcher script that registers `placeholders`, runs the sandbox (`prefix` and the
    script's arguments) as its child, drops them when it ends, and ends as the sandbox did
    (its exit code, or the signal that stopped the launcher, which it passes on).

    The sandbox runs in the background so that a signal reaches the launcher's trap at once
    (a foreground child would hold it until it ended); its stdin is kept (a background job's
    would be /dev/null) and the program gets SIGINT and SIGQUIT back (the bubblewrap command
    line restores them)."""
    places = sorted(placeholders)
    cases = " ".join(f"{entry(p)}) p={shlex.quote(str(p))};;" for p in places)
    body = "\n".join(
        [
            'rm -f -- "$1"; shift',
            f"R={shlex.quote(str(registry))} mine=",
            f"_path() {{ case $1 in {cases} esac; }}",
            _FUNCTIONS,
            'exec 9>>"$R/.lock" && flock 9 || _fail',
            "_listed",
            *(f"_reg {entry(p)}" for p in places),
            """printf '%s\\n' $mine > "$R/$$.m" || _fail""",
            "exec 9>&-",  # the lock goes with its only descriptor
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
    run = f'exec setpriv --pdeathsig KILL /bin/sh -c {shlex.quote(body)} sandboxed "$0" "$@"'
    return f"#!/bin/sh\n{run}\n"


# `_listed`: the entries any marker lists. `_reg ENTRY`: this launcher uses the placeholder,
# unless its path stands there unlisted (an empty directory of the user's). `_end`, under the
# lock: the entries live launchers still list stay; the others' placeholders go (this one's,
# and those dead launchers left: rmdir, only empty directories), and so do dead launchers'
# markers; this one's is emptied (a fork spared: the next sweep removes it).
_FUNCTIONS = """\
_fail() {
  echo "tether sandbox: cannot register its placeholders in $R; the command did not run" >&2
  exit 126
}
_listed() {
  listed=
  for m in "$R"/*.m; do
    [ -s "$m" ] || continue
    while read -r e; do listed="$listed $e"; done < "$m"
  done
}
_reg() {
  _path "$1"
  case "$listed " in *" $1 "*) ;; *) [ -e "$p" ] && return 0;; esac
  mine="$mine $1"
  [ -e "$R/$1.p" ] || printf %s "$p" > "$R/$1.p" || _fail
}
_end() {
  exec 9>>"$R/.lock" && flock 9 || return
  : > "$R/$$.m"
  used= left= dead=
  for m in "$R"/*.m; do
    [ -s "$m" ] || continue
    n=${m##*/}; n=${n%.m}
    if kill -0 "$n" 2>/dev/null; then
      while read -r e; do used="$used $e"; done < "$m"
    else
      while read -r e; do left="$left $e"; done < "$m"
      dead="$dead $n"
    fi
  done
  set --
  for e in $mine; do
    case "$used " in *" $e "*) ;; *) _path "$e"; set -- "$@" "$p";; esac
  done
  for e in $left; do
    case "$used $mine " in *" $e "*) ;; *) read -r p < "$R/$e.p" && set -- "$@" "$p";; esac
  done
  [ $# = 0 ] || rmdir -- "$@" 2>/dev/null
  set --
  for n in $dead; do set -- "$@" "$R/$n.m"; done
  [ $# = 0 ] || rm -f -- "$@"
  exec 9>&-
}"""
