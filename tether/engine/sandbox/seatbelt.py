"""A confined command on macOS: `sandbox-exec -p PROFILE`, a Seatbelt profile to the same effect
as the Linux mechanisms (writes only in the writable trees and the private temp dir, protected
and hidden paths excepted; no network unless allowed). Written to Apple's profile language as
Codex and Claude Code use it; it has not run on this project's Linux machines."""

from __future__ import annotations

from pathlib import Path

from tether.engine.sandbox.confinement import Confinement

SANDBOX_EXEC = "/usr/bin/sandbox-exec"


def seatbelt_profile(c: Confinement) -> str:
    lines = ["(version 1)", "(allow default)", '(deny file-write* (subpath "/"))']
    writable = [*c.writable, c.tmp]
    lines.append("(allow file-write* " + " ".join(_subpath(p) for p in writable) + ")")
    devices = ("/dev/null", "/dev/zero", "/dev/tty", "/dev/ptmx", "/dev/dtracehelper")
    lines.append("(allow file-write* " + " ".join(f'(literal "{d}")' for d in devices) + ")")
    lines.append('(allow file-write* (regex #"^/dev/ttys[0-9]+$"))')
    if c.protected:  # later rules win: these come after the allows they narrow
        lines.append("(deny file-write* " + " ".join(_subpath(p) for p in c.protected) + ")")
    if c.hidden:
        hidden = " ".join(_subpath(p) for p in c.hidden)
        lines.append(f"(deny file-read* process-exec {hidden})")
    if not c.network:
        lines.append("(deny network*)")
    return "\n".join(lines) + "\n"


def seatbelt_argv(c: Confinement, argv: list[str]) -> list[str]:
    return [SANDBOX_EXEC, "-p", seatbelt_profile(c), "env", f"TMPDIR={c.tmp}", *argv]


def _subpath(path: Path) -> str:
    text = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'(subpath "{text}")'
