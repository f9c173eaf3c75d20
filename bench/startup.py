"""Startup: median time from spawning `tether acp` to its `initialize` response, and to its first
`session/new` response (the session is ready: what a user waits for), each as a ratio to spawning
a bare `python -c pass` measured in the same run (the machine is noisy; ratios aren't). The same
for `tether lsp`: its `initialize` (answered before pygls is imported) and its first command
answered by pygls (`tether.cancel`: the server is ready for a prompt). Each for both starts
(bench/warm_setup.py): warm (a worker of the user's warm server) and cold (in-process).

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
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.warm_setup import COLD, warm_server

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


def tether(env: dict[str, str], project: str) -> tuple[float, float]:
    """(spawn -> initialize answered, spawn -> session/new answered), in seconds."""
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


def tether_lsp(env: dict[str, str], project: str) -> tuple[float, float]:
    """(spawn -> initialize answered, spawn -> the first command answered), in seconds."""
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


def _memory_kb(pid: int) -> dict[str, int]:
    """Rss, Pss and Private (clean + dirty) of a process, in kB."""
    found: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                found[key] = int(rest.split()[0])
    found["Private"] = found.get("Private_Clean", 0) + found.get("Private_Dirty", 0)
    return found


def _worker_of(launcher: int, base: str) -> int | None:
    """The warm server's worker serving `launcher` (the one holding the launcher's stdout: on
    a private fd, fd 1 is the null device once claimed)."""
    stdout = os.readlink(f"/proc/{launcher}/fd/1")
    for pid_file in Path(base).glob("*.pid"):
        server = int(pid_file.read_text())
        for task in Path(f"/proc/{server}/task").iterdir():
            for child in (task / "children").read_text().split():
                if stdout in _open_files(int(child)):
                    return int(child)
    return None


def _open_files(pid: int) -> set[str]:
    found: set[str] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            found.add(os.readlink(fd))
        except OSError:
            continue
    return found


def memory(env: dict[str, str], project: str) -> list[tuple[str, dict[str, int]]]:
    """What a started `tether acp` holds once its first session is open: the process itself,
    and for a warm start the worker that serves it."""
    proc = subprocess.Popen([sys.executable, "-m", "tether", "acp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    new = {"jsonrpc": "2.0", "id": 1, "method": "session/new",
           "params": {"cwd": project, "mcpServers": []}}  # fmt: skip
    proc.stdin.write(INIT + json.dumps(new).encode() + b"\n")
    proc.stdin.flush()
    while json.loads(proc.stdout.readline()).get("id") != 1:
        pass
    time.sleep(0.5)  # the engine loaded (a cold start loads it on a thread)
    found = [("process", _memory_kb(proc.pid))]
    worker = _worker_of(proc.pid, env["TETHER_WARM_DIR"]) if env.get("TETHER_WARM") == "1" else None
    if worker is not None:
        found.append(("its worker", _memory_kb(worker)))
    proc.stdin.close()
    proc.wait(timeout=10)
    proc.stdout.close()
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    runs = ap.parse_args().runs
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as project:
        cold = {**os.environ, "TETHER_HOME": home, **COLD}
        tether(cold, project)  # warm the page cache and byte-code; cache session/new's answer
        tether_lsp(cold, project)
        with warm_server({**os.environ, "TETHER_HOME": home}) as warm:
            for _ in range(runs):  # interleaved, so drift hits all alike
                times.setdefault("base", []).append(bare())
                for start, env in (("warm", warm), ("cold", cold)):
                    for front, run in (("acp", tether), ("lsp", tether_lsp)):
                        i, r = run(env, project)
                        times.setdefault(f"{front} {start} init", []).append(i)
                        times.setdefault(f"{front} {start} ready", []).append(r)
            held = {"warm": memory(warm, project), "cold": memory(cold, project)}
            server = _memory_kb(_server_of(warm["TETHER_WARM_DIR"]))
    b = statistics.median(times["base"])
    print(f"python -c pass                     median {b * 1000:7.1f} ms")
    labels = {"init": "initialize", "ready": "first session/new"}
    targets = {"acp init": " (target <= 3x)", "acp ready": " (target <= 5x)", "lsp init": ""}
    for start in ("warm", "cold"):
        for front in ("acp", "lsp"):
            for what in ("init", "ready"):
                t = statistics.median(times[f"{front} {start} {what}"])
                label = labels[what] if front == "acp" or what == "init" else "first command"
                goal = targets.get(f"{front} {what}", "") if start == "warm" else ""
                name = f"tether {front} {start} {label}"
                print(f"{name:34} median {t * 1000:7.1f} ms  {t / b:5.2f}x{goal}")
    for start, found in held.items():
        for what, kb in found:
            print(
                f"tether acp {start} start, {what:10} RSS {kb['Rss'] / 1024:5.1f} MB, "
                f"PSS {kb['Pss'] / 1024:5.1f} MB, private {kb['Private'] / 1024:5.1f} MB"
            )
    _memory_ratios(held, server)


def _server_of(base: str) -> int:
    [pid_file] = Path(base).glob("*.pid")
    return int(pid_file.read_text())


def _memory_ratios(
    held: dict[str, list[tuple[str, dict[str, int]]]], server: dict[str, int]
) -> None:
    """A warm client (stand-in + worker) against the cold process, by what each holds alone
    (private: USS) and by its share of what it shares (PSS); the server's, once per interpreter
    and install, apart."""
    cold = held["cold"][0][1]
    for key, name in (("Private", "USS"), ("Pss", "PSS")):
        warm = sum(kb[key] for _, kb in held["warm"])
        print(
            f"warm client {name} {warm / 1024:5.1f} MB against the cold process's "
            f"{cold[key] / 1024:5.1f} MB: {warm / cold[key]:.2f}x"
        )
    print(
        f"the warm server (one per interpreter and install): private {server['Private'] / 1024:5.1f}"
        f" MB, {server['Private'] / cold['Private']:.2f}x the cold process"
    )


if __name__ == "__main__":
    main()
