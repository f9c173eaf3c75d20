"""Startup: median time from spawning `tether acp` to its `initialize` response, as a ratio to
spawning a bare `python -c pass` measured in the same run (the machine is noisy; ratios aren't).

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


def tether(home: str) -> float:
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
    elapsed = time.perf_counter() - start
    assert json.loads(line)["result"]["protocolVersion"] == 1, line
    proc.stdin.close()
    proc.wait(timeout=10)
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    runs = ap.parse_args().runs
    with tempfile.TemporaryDirectory() as home:
        tether(home)  # warm the page cache and byte-code
        base, ours = [], []
        for _ in range(runs):  # interleaved, so drift hits both alike
            base.append(bare())
            ours.append(tether(home))
    b, t = statistics.median(base), statistics.median(ours)
    print(f"python -c pass        median {b * 1000:7.1f} ms")
    print(f"tether acp initialize median {t * 1000:7.1f} ms")
    print(f"ratio {t / b:.2f}x (target: at most 3x)")


if __name__ == "__main__":
    main()
