"""What a `tether acp` / `tether lsp` launcher and the warm server (warm_server.py) say to each
other, and where they meet. Imported on the launcher's path before anything else: builtins and
C modules only (no json, no socket's enums).

A launcher sends its stdio fds (SCM_RIGHTS) with one request: its working directory, umask,
argv, `sys.path`, resource limits and environment, NUL-separated and length-prefixed. The
server answers in lines: `pid N` once the worker runs, then `exit N` (N < 0: killed by signal
-N); or `stale` when its loaded code changed on disk (the launcher then starts in-process)."""

from __future__ import annotations

import os
import sys
from stat import S_ISDIR
from types import ModuleType

VERSION = b"tether-warm 2"
IDLE_SECONDS = 1800.0  # a server with no worker for this long exits (TETHER_WARM_IDLE_SECONDS)


class Request:
    """What a worker takes over from its launcher: `limits` are its resource limits, as
    (resource, soft, hard)."""

    def __init__(
        self,
        cwd: bytes,
        umask: int,
        argv: list[bytes],
        path: list[bytes],
        env: list[bytes],
        limits: list[tuple[int, int, int]],
    ) -> None:
        self.cwd = cwd
        self.umask = umask
        self.argv = argv
        self.path = path
        self.env = env
        self.limits = limits

    def encode(self) -> bytes:
        limits = [b"%d:%d:%d" % limit for limit in self.limits]
        parts = [VERSION, self.cwd, b"%d" % self.umask, b"%d" % len(self.argv), *self.argv]
        parts += [b"%d" % len(self.path), *self.path, b"%d" % len(limits), *limits, *self.env]
        body = b"\0".join(parts)
        return len(body).to_bytes(4, "big") + body

    @classmethod
    def decode(cls, body: bytes) -> Request:
        try:
            return cls._decode(body.split(b"\0"))
        except (IndexError, ValueError) as exc:
            raise ValueError(f"not a tether-warm request: {exc}") from None

    @classmethod
    def _decode(cls, parts: list[bytes]) -> Request:
        if parts[0] != VERSION:
            raise ValueError(parts[0][:40])
        cwd, umask = parts[1], int(parts[2])
        argv, rest = _counted(parts[3:])
        path, rest = _counted(rest)
        limits, rest = _counted(rest)
        triples = [tuple(int(n) for n in limit.split(b":")) for limit in limits]
        if any(len(t) != 3 for t in triples):
            raise ValueError("a resource limit is resource:soft:hard")
        env = [e for e in rest if e]
        return cls(cwd, umask, argv, path, env, triples)  # pyright: ignore[reportArgumentType]


def _counted(parts: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    count = int(parts[0])
    if count < 0 or count >= len(parts):
        raise ValueError("a count past the end")
    return parts[1 : 1 + count], parts[1 + count :]


def own_request(argv: list[str]) -> Request:
    import resource

    umask = os.umask(0)
    os.umask(umask)
    env = [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in os.environ.items()]
    limits = [(r, *resource.getrlimit(r)) for r in _limits(resource)]
    return Request(
        os.fsencode(os.getcwd()),
        umask,
        [os.fsencode(a) for a in argv],
        [os.fsencode(p) for p in sys.path],
        env,
        limits,
    )


def _limits(resource: ModuleType) -> list[int]:
    names = ("CPU", "FSIZE", "DATA", "STACK", "CORE", "NOFILE", "AS", "NPROC", "MEMLOCK")
    return [getattr(resource, f"RLIMIT_{n}") for n in names if hasattr(resource, f"RLIMIT_{n}")]


def enabled() -> bool:
    """Warm starts are Linux-only, off with TETHER_WARM=0, and off for a launcher confined in a
    way a server started elsewhere could not reproduce (no-new-privileges, seccomp: an editor's
    sandbox, or a command tether confined); other confinement (namespaces, cgroup) is part of
    the server's identity."""
    if sys.platform != "linux" or os.environ.get("TETHER_WARM", "1") == "0":
        return False
    if sys.flags.isolated or sys.flags.safe_path or not hasattr(os, "pidfd_open"):
        return False
    return unconfined(_read("/proc/self/status"))


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
    """What a server must share with a launcher to serve it: the interpreter and its import
    `path` (without the entry a launcher's script or `-m` puts first), the user and groups, the
    scheduling priority, the namespaces and cgroup."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts = [sys.executable, sys.version, here, *path]
    parts += [f"{os.getuid()}:{os.getgid()}:{sorted(os.getgroups())}"]
    parts += [f"nice {os.getpriority(os.PRIO_PROCESS, 0)}"]
    return "\n".join(parts).encode("utf-8", "surrogateescape") + b"\n" + confinement()


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
