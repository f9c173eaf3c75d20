"""Where tether's logs go: a rotating file in the state directory (`tether doctor` prints its
path). Never stdout, which carries protocol frames; stderr only when a level is asked for
(`--log-level` or TETHER_LOG_LEVEL), so an editor's stderr pane stays quiet by default.

Set up after the first `initialize` is answered: `logging` is not on the startup path.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

LEVEL_ENV = "TETHER_LOG_LEVEL"
DEFAULT_LEVEL = "INFO"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
MAX_BYTES = 1 << 20  # per file; with BACKUPS old files kept, at most 4 MiB of logs
BACKUPS = 3
FILE_NAME = "tether.log"


def log_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$TETHER_HOME/logs` when TETHER_HOME is set, else the platform's user log directory
    (e.g. `~/.local/state/tether/log`)."""
    env = os.environ if env is None else env
    home = env.get("TETHER_HOME")
    if home:
        return Path(home) / "logs"
    import platformdirs

    return Path(platformdirs.user_log_dir("tether", appauthor=False))


def log_path(env: Mapping[str, str] | None = None) -> Path:
    return log_dir(env) / FILE_NAME


def setup_logging(
    role: str,
    level: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BYTES,
) -> Path:
    """Send every logger to the log file at `level` (default: TETHER_LOG_LEVEL, else
    INFO), and to stderr too when a level was given. `role` ("acp", "ask") tags each line.
    Returns the file's path."""
    env = os.environ if env is None else env
    asked = level or env.get(LEVEL_ENV) or None
    name = (asked or DEFAULT_LEVEL).upper()
    known = name in LEVELS
    fmt = logging.Formatter(f"%(asctime)s {role}[%(process)d] %(levelname)s %(name)s: %(message)s")
    # The root logger: the libraries' records (httpx, asyncio) go to the file too, and none
    # reaches Python's last-resort handler, which writes to stderr.
    logger = logging.getLogger()
    logger.setLevel(name if known else DEFAULT_LEVEL)
    path = log_path(env)
    handlers: list[logging.Handler] = []
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)  # logs may quote prompts and files: owner-only
        handlers.append(RotatingLog(path, max_bytes, BACKUPS))
    except OSError as exc:
        print(f"tether: cannot write the log file {path}: {exc}", file=sys.stderr)
    if asked:
        handlers.append(logging.StreamHandler(sys.stderr))
    for handler in handlers:
        handler.setFormatter(fmt)
        logger.addHandler(handler)
    if not known:
        logger.warning(
            "unknown log level %r (expected one of: %s); using %s",
            asked,
            ", ".join(LEVELS),
            DEFAULT_LEVEL,
        )
    return path


class RotatingLog(logging.FileHandler):
    """A log file that is renamed to `.1` (`.1` to `.2`, ...) when it reaches `max_bytes`.

    Several processes write the same file (one agent per editor window, `tether ask` and its
    agent): each checks that its open file is still the one at `path` and reopens it when
    another process has rotated it, rather than rotating a second time. (The standard
    RotatingFileHandler does not, and importing logging.handlers costs startup time.)"""

    def __init__(self, path: Path, max_bytes: int, backups: int) -> None:
        super().__init__(path, encoding="utf-8", delay=True)
        self.max_bytes = max_bytes
        self.backups = backups

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._follow()
            if self.stream is not None and os.fstat(self.stream.fileno()).st_size >= self.max_bytes:
                self._rotate()
        except OSError:
            self.handleError(record)
            return
        super().emit(record)

    def _follow(self) -> None:
        """Reopen (lazily) when the file at our path is no longer the one we write."""
        if self.stream is None:
            return
        mine = os.fstat(self.stream.fileno())
        try:
            there = os.stat(self.baseFilename)
        except FileNotFoundError:
            there = None
        if there is None or (there.st_ino, there.st_dev) != (mine.st_ino, mine.st_dev):
            self._reopen()

    def _reopen(self) -> None:
        stream, self.stream = self.stream, None  # FileHandler.emit opens the file again
        if stream is not None:
            stream.close()

    def _rotate(self) -> None:
        self._reopen()
        base = self.baseFilename
        for n in range(self.backups - 1, 0, -1):
            _rename(f"{base}.{n}", f"{base}.{n + 1}")
        if self.backups > 0:
            _rename(base, f"{base}.1")
        else:
            _remove(base)


def _rename(old: str, new: str) -> None:
    try:
        os.replace(old, new)
    except FileNotFoundError:  # not there yet, or another process moved it first
        pass


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
