"""Startup: median time from spawning `tether acp` to its `initialize` response, and to its first
`session/new` response (the session is ready: what a user waits for), each as a ratio to spawning
a bare `python -c pass` measured in the same run (the machine is noisy; ratios aren't). The same
for `tether lsp`: its `initialize` (answered before pygls is imported) and its first command
answered by pygls (`tether.cancel`: the server is ready for a prompt).

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
from typing import IO

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


def _lsp_frame(obj: dict[str, object]) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _lsp_read(stream: IO[bytes]) -> dict[str, object]:
    length = 0
    while (line := stream.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))


def tether_lsp(home: str, project: str) -> tuple[float, float]:
    """(spawn -> initialize answered, spawn -> the first command answered), in seconds."""
    env = {**os.environ, "TETHER_HOME": home}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "lsp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"processId": None, "rootUri": f"file://{project}", "capabilities": {}}}  # fmt: skip
    proc.stdin.write(_lsp_frame(init))
    proc.stdin.flush()
    answer = _lsp_read(proc.stdout)
    initialized = time.perf_counter() - start
    assert "capabilities" in answer["result"], answer  # type: ignore[operator]
    cancel = {"jsonrpc": "2.0", "id": 1, "method": "workspace/executeCommand",
              "params": {"command": "tether.cancel", "arguments": []}}  # fmt: skip
    proc.stdin.write(_lsp_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    proc.stdin.write(_lsp_frame(cancel))
    proc.stdin.flush()
    while _lsp_read(proc.stdout).get("id") != 1:
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
        tether_lsp(home, project)
        base: list[float] = []
        init: list[float] = []
        ready: list[float] = []
        lsp_init: list[float] = []
        lsp_ready: list[float] = []
        for _ in range(runs):  # interleaved, so drift hits all alike
            base.append(bare())
            i, r = tether(home, project)
            init.append(i)
            ready.append(r)
            i, r = tether_lsp(home, project)
            lsp_init.append(i)
            lsp_ready.append(r)
    b, i, r = statistics.median(base), statistics.median(init), statistics.median(ready)
    li, lr = statistics.median(lsp_init), statistics.median(lsp_ready)
    print(f"python -c pass               median {b * 1000:7.1f} ms")
    print(f"tether acp initialize        median {i * 1000:7.1f} ms  {i / b:.2f}x (target <= 3x)")
    print(f"tether acp first session/new median {r * 1000:7.1f} ms  {r / b:.2f}x (target <= 5x)")
    print(f"tether lsp initialize        median {li * 1000:7.1f} ms  {li / b:.2f}x (target <= 3x)")
    print(f"tether lsp first command     median {lr * 1000:7.1f} ms  {lr / b:.2f}x")


if __name__ == "__main__":
    main()
