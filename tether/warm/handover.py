"""What a launcher and the warm server (tether/warm/fork_server.py) say to each other. Imported
on the launcher's path before anything else: builtins and C modules only (no json, no socket's
enums).

A launcher sends its stdio fds (SCM_RIGHTS) with one request: the process state its worker
takes over (working directory, umask, nice level, CPU affinity, locale, how its standard
streams encode and buffer, argv, `sys.path`, resource limits, environment), NUL-separated and
length-prefixed. The server answers in lines: `pid N` once the worker runs, then `exit N`
(N < 0: killed by signal -N); `stale` when it retires rather than serve this launcher (its code
changed on disk, or the launcher asks for a priority or a limit the server cannot give: the
launcher starts a successor); `cold` when it cannot hold this launcher (both then serve
in-process).

A `stop` request (tether/warm/control.py) asks the server to retire: it answers `stopping PID`,
serves no one new and exits when its last worker has ended."""

from __future__ import annotations

import os
import sys

VERSION = b"tether-warm 3"
SERVE, STOP = b"serve", b"stop"
IDLE_SECONDS = 1800.0  # a server with no worker for this long exits (TETHER_WARM_IDLE_SECONDS)
STREAMS = ("stdin", "stdout", "stderr")


class Request:
    """What a worker takes over from its launcher. `limits`: its resource limits, as (resource,
    soft, hard); `stdio`: per standard stream, (encoding, errors, line_buffering, write_through),
    or None where the launcher had none."""

    def __init__(self, cwd: bytes, argv: list[bytes], path: list[bytes], env: list[bytes]) -> None:
        self.cwd = cwd
        self.argv = argv
        self.path = path
        self.env = env
        self.umask = 0o22
        self.nice = 0
        self.affinity: list[int] = []
        self.ctype = b""  # the LC_CTYPE locale
        self.stdio: list[tuple[str, str, bool, bool] | None] = [None, None, None]
        self.limits: list[tuple[int, int, int]] = []

    def encode(self) -> bytes:
        limits = [b"%d:%d:%d" % limit for limit in self.limits]
        parts = [VERSION, SERVE, self.cwd, b"%d" % self.umask, b"%d" % self.nice]
        parts += [b",".join(b"%d" % cpu for cpu in self.affinity), self.ctype, _streams(self.stdio)]
        parts += [b"%d" % len(self.argv), *self.argv, b"%d" % len(self.path), *self.path]
        parts += [b"%d" % len(limits), *limits, *self.env]
        return framed(parts)

    @classmethod
    def decode(cls, body: bytes) -> Request:
        try:
            return cls._decode(body.split(b"\0"))
        except (IndexError, ValueError) as exc:
            raise ValueError(f"not a tether-warm request: {exc}") from None

    @classmethod
    def _decode(cls, parts: list[bytes]) -> Request:
        if parts[:2] != [VERSION, SERVE]:
            raise ValueError(parts[0][:40])
        cwd, umask, nice, cpus, ctype, streams = parts[2:8]
        argv, rest = _counted(parts[8:])
        path, rest = _counted(rest)
        limits, rest = _counted(rest)
        request = cls(cwd, argv, path, [e for e in rest if e])
        request.umask, request.nice, request.ctype = int(umask), int(nice), ctype
        request.affinity = [int(cpu) for cpu in cpus.split(b",") if cpu]
        request.stdio = _unstreams(streams)
        request.limits = [_limit(limit) for limit in limits]
        return request


def framed(parts: list[bytes]) -> bytes:
    body = b"\0".join(parts)
    return len(body).to_bytes(4, "big") + body


def is_stop(body: bytes) -> bool:
    return body == VERSION + b"\0" + STOP


def _streams(stdio: list[tuple[str, str, bool, bool] | None]) -> bytes:
    said = [b"-" if s is None else f"{s[0]}:{s[1]}:{int(s[2])}:{int(s[3])}".encode() for s in stdio]
    return b";".join(said)


def _unstreams(text: bytes) -> list[tuple[str, str, bool, bool] | None]:
    found: list[tuple[str, str, bool, bool] | None] = []
    for said in text.decode("ascii").split(";"):
        if said == "-":
            found.append(None)
            continue
        encoding, errors, line, write = said.split(":")
        found.append((encoding, errors, line == "1", write == "1"))
    if len(found) != 3:
        raise ValueError("three standard streams")
    return found


def _limit(text: bytes) -> tuple[int, int, int]:
    numbers = [int(n) for n in text.split(b":")]
    if len(numbers) != 3:
        raise ValueError("a resource limit is resource:soft:hard")
    return numbers[0], numbers[1], numbers[2]


def _counted(parts: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    count = int(parts[0])
    if count < 0 or count >= len(parts):
        raise ValueError("a count past the end")
    return parts[1 : 1 + count], parts[1 + count :]


def own_request(argv: list[str]) -> Request:
    """This process's state, for its worker to take over."""
    import _locale  # locale.py loads re (startup)
    import resource

    env = [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in os.environ.items()]
    path = [os.fsencode(p) for p in sys.path]
    request = Request(os.fsencode(os.getcwd()), [os.fsencode(a) for a in argv], path, env)
    request.umask = os.umask(0)
    os.umask(request.umask)
    request.nice = os.getpriority(os.PRIO_PROCESS, 0)
    request.affinity = sorted(os.sched_getaffinity(0))
    request.ctype = os.fsencode(_locale.setlocale(_locale.LC_CTYPE, None))
    request.stdio = [_stream(getattr(sys, name)) for name in STREAMS]
    request.limits = [(r, *resource.getrlimit(r)) for r in limited(resource)]
    return request


def _stream(stream: object) -> tuple[str, str, bool, bool] | None:
    if stream is None:
        return None
    encoding, errors = getattr(stream, "encoding", None), getattr(stream, "errors", None)
    if not isinstance(encoding, str) or not isinstance(errors, str):
        return None
    line, write = getattr(stream, "line_buffering", False), getattr(stream, "write_through", False)
    return encoding, errors, bool(line), bool(write)


def limited(resource: object) -> list[int]:
    names = ("CPU", "FSIZE", "DATA", "STACK", "CORE", "NOFILE", "AS", "NPROC", "MEMLOCK")
    return [getattr(resource, f"RLIMIT_{n}") for n in names if hasattr(resource, f"RLIMIT_{n}")]
