"""Who may share a warm server: warm starts on or off for this process, the server's identity
(what it must share with a launcher to serve it) and where the servers meet their launchers.
Imported on the launcher's path before anything else: builtins and C modules only.

A server serves every launcher of one interpreter and install, one user, one set of namespaces
and cgroup, and one interpreter configuration (what the interpreter decided at its start and
cannot change later: its flags, options, hash seed and file-system encoding). What a process
may change at any time (its directory, environment, umask, nice level, CPU affinity, resource
limits, locale, standard streams) is the launcher's, taken over by its worker
(tether/warm/worker.py), not part of the identity."""

from __future__ import annotations

import os
import sys
from stat import S_ISDIR

# Interpreter-start variables that no option expresses; not secrets, so the server is given them.
INTERPRETER_ENV = ("PYTHONHASHSEED", "PYTHONMALLOC", "LD_LIBRARY_PATH", "PYTHONHOME")
# The kernel's name for SO_PEERPIDFD (Linux 6.5; Python 3.11's socket module lacks it): 77 but on
# the architectures whose socket options are numbered apart.
SO_PEERPIDFD = {"parisc": 0x404B, "sparc": 0x56, "sparc64": 0x56}.get(os.uname().machine, 77)


def enabled() -> bool:
    """Warm starts are Linux-only, off with TETHER_WARM=0, and off for a launcher confined in a
    way a server started elsewhere could not reproduce (no-new-privileges, seccomp: an editor's
    sandbox, or a command tether confined); other confinement (namespaces, cgroup) is part of
    the server's identity."""
    return why_cold() is None


def why_cold() -> str | None:
    """Why this process starts cold (None: it may start warm)."""
    if sys.platform != "linux":
        return "warm starts are Linux-only"
    if os.environ.get("TETHER_WARM", "1") == "0":
        return "TETHER_WARM=0"
    if sys.flags.isolated or sys.flags.safe_path or sys.flags.inspect or sys.flags.interactive:
        return "this interpreter runs isolated or interactive (-I, -P, -i)"
    if not unconfined(_read("/proc/self/status")):
        return "this process is confined (seccomp or no-new-privileges)"
    if sys.getfilesystemencoding() != "utf-8":
        return "the locale's file-system encoding is not UTF-8 (a server cannot take it on)"
    return kernel_short()


def kernel_short() -> str | None:
    """What the kernel lacks for a server to know its peer and hold its launchers."""
    if not hasattr(os, "pidfd_open") or not peer_pidfd_known():
        return "this kernel cannot name a socket's peer by pidfd (SO_PEERPIDFD, Linux 6.5)"
    scope = _read("/proc/sys/kernel/yama/ptrace_scope").strip()
    if scope not in (b"", b"0", b"1"):
        return f"ptrace is restricted (yama ptrace_scope {scope.decode()}): a server cannot hold"
    return None


def peer_pidfd_known() -> bool:
    """The kernel answers SO_PEERPIDFD (asked of a socket pair: a few microseconds)."""
    import _socket

    a, b = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        raw = a.getsockopt(_socket.SOL_SOCKET, SO_PEERPIDFD, 4)
    except OSError:
        return False
    finally:
        a.close()
        b.close()
    os.close(int.from_bytes(raw, sys.byteorder, signed=True))
    return True


def unconfined(status: bytes) -> bool:
    """A process's /proc status says neither no-new-privileges nor seccomp."""
    return b"NoNewPrivs:\t0" in status and b"Seccomp:\t0" in status


def confinement(pid: str = "self") -> bytes:
    """A process's namespaces and cgroup: a server serves only launchers that share its own."""
    parts: list[str] = []
    for ns in ("mnt", "pid", "net", "user", "ipc", "uts", "cgroup"):
        try:
            parts.append(os.readlink(f"/proc/{pid}/ns/{ns}"))
        except OSError:
            parts.append(ns)
    return "\n".join(parts).encode() + b"\n" + _read(f"/proc/{pid}/cgroup")


def identity(path: list[str]) -> bytes:
    """What a server must share with a launcher to serve it: the interpreter, its install and
    import `path` (without the entry a launcher's script or `-m` puts first), its configuration,
    the user and groups, the namespaces and cgroup."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts = [sys.executable, sys.version, here, *path, *configuration()]
    parts += [f"{os.getuid()}:{os.getgid()}:{sorted(os.getgroups())}"]
    return "\n".join(parts).encode("utf-8", "surrogateescape") + b"\n" + confinement()


def configuration() -> list[str]:
    """What this interpreter decided at its start, as the options that make another decide the
    same, and the start variables no option names."""
    found = interpreter_options()
    found += [f"{k}={os.environ[k]}" for k in INTERPRETER_ENV[:2] if k in os.environ]
    return [*found, f"fs {sys.getfilesystemencoding()}:{sys.getfilesystemencodeerrors()}"]


def interpreter_options() -> list[str]:
    """This interpreter's flags and options as command-line options (some came from its
    environment: PYTHONUTF8, PYTHONWARNINGS, PYTHONDEVMODE, ...), so a server started with them
    runs as it does. `-P` and `-I` are not among them: warm starts are off under them."""
    flags = sys.flags
    options = [f"-{letter}" for letter, on in _SWITCHES if getattr(flags, on)]
    options += ["-O"] * flags.optimize + ["-b"] * flags.bytes_warning + ["-v"] * flags.verbose
    options += ["-X", f"utf8={flags.utf8_mode}"]  # else the empty environment's C locale decides
    xoptions = {k: v for k, v in sys._xoptions.items() if k not in _FROM_FLAGS}
    if flags.dev_mode:
        xoptions["dev"] = True
    if flags.warn_default_encoding:
        xoptions["warn_default_encoding"] = True
    if getattr(flags, "int_max_str_digits", -1) >= 0:
        xoptions["int_max_str_digits"] = flags.int_max_str_digits
    for key, value in sorted(xoptions.items()):
        options += ["-X", key if value is True else f"{key}={value}"]
    for warning in sys.warnoptions:
        options += ["-W", warning]
    return options


_FROM_FLAGS = ("utf8", "dev", "warn_default_encoding", "int_max_str_digits")
_SWITCHES = (
    ("B", "dont_write_bytecode"),
    ("s", "no_user_site"),
    ("S", "no_site"),
    ("E", "ignore_environment"),
    ("q", "quiet"),
)


def server_name(ident: bytes) -> str:
    import zlib

    return f"{zlib.crc32(ident):08x}{zlib.adler32(ident):08x}"


def warm_dir() -> str | None:
    """The private directory of this user's servers, made when missing; None when it is not
    private (another user could plant a socket there)."""
    base = os.environ.get("TETHER_WARM_DIR")
    if not base:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        base = (
            os.path.join(runtime, "tether-warm") if runtime else f"/tmp/tether-warm-{os.getuid()}"
        )
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        st = os.lstat(base)
    except OSError:
        return None
    private = st.st_uid == os.getuid() and st.st_mode & 0o077 == 0
    return base if private and S_ISDIR(st.st_mode) else None


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""
