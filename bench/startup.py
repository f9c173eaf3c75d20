"""Startup: median time from spawning `tether acp` to its `initialize` response, and to its first
`session/new` response (the session is ready: what a user waits for), each as a ratio to spawning
a bare `python -c pass` measured in the same run (the machine is noisy; ratios aren't).

    python bench/startup.py [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

INIT = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}},
        }
    ).encode()
    + b"\n"
)


def bare() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def tether(home: str, project: str) -> tuple[float, float]:
    """(spawn -> initialize answered, spawn -> session/new answered), in seconds."""
    env = {**os.environ, "TETHER_HOME": home}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "acp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT)
    proc.stdin.flush()
    line = proc.stdout.readline()
    initialized = time.perf_counter() - start
    assert json.loads(line)["result"]["protocolVersion"] == 1, line
    new = {"jsonrpc": "2.0", "id": 1, "method": "session/new",
           "params": {"cwd": project, "mcpServers": []}}  # fmt: skip
    proc.stdin.write(json.dumps(new).encode() + b"\n")
    proc.stdin.flush()
    while json.loads(proc.stdout.readline()).get("id") != 1:
        pass
    ready = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(timeout=10)
    return initialized, ready


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    runs = ap.parse_args().runs
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as project:
        tether(home, project)  # warm the page cache and byte-code
        base: list[float] = []
        init: list[float] = []
        ready: list[float] = []
        for _ in range(runs):  # interleaved, so drift hits both alike
            base.append(bare())
            i, r = tether(home, project)
            init.append(i)
            ready.append(r)
    b, i, r = statistics.median(base), statistics.median(init), statistics.median(ready)
    print(f"python -c pass               median {b * 1000:7.1f} ms")
    print(f"tether acp initialize        median {i * 1000:7.1f} ms  {i / b:.2f}x (target <= 3x)")
    print(f"tether acp first session/new median {r * 1000:7.1f} ms  {r / b:.2f}x (target <= 5x)")


if __name__ == "__main__":
    main()
