"""The two ways `tether acp` / `tether lsp` start, for the benches: cold (in-process: a user's
first start after a boot, an upgrade or a long idle) and warm (a worker forked by the user's
warm server, tether/warm/fork_server.py: every other start). The warm server runs in a private
directory and is stopped at the end."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tether.warm.control import stop_servers

COLD = {"TETHER_WARM": "0"}


@contextmanager
def warm_server(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """The environment of a warm start (`env` plus the server's directory), the server started
    by a first `tether acp` under `env` and listening."""
    with tempfile.TemporaryDirectory() as base:
        os.chmod(base, 0o700)
        warm = {**env, "TETHER_WARM": "1", "TETHER_WARM_DIR": base}
        command = [sys.executable, "-m", "tether", "acp"]
        subprocess.run(command, input=b"", env=warm, check=True)
        try:
            _listening(Path(base))
            yield warm
        finally:
            stop_servers(base)


def _listening(base: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not list(base.glob("*.sock")) or not list(base.glob("*.pid")):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no warm server listens in {base}")
        time.sleep(0.05)
