"""What a warm start holds against a cold one, after real work: `tether acp` with a scripted
model runs N turns in one session (every tenth with a `list_dir` call), then the memory of the
client's processes is read from /proc/PID/smaps_rollup: for a warm start the stand-in (a shell)
and its worker (forked by the user's warm server, sharing its pages), for a cold start the one
process. Printed as ratios to the cold process, in one run: USS (what only it holds) and PSS
(its share of what it shares); and the server's own, once per interpreter and install.

    python bench/warm_memory.py [--turns 1 200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.startup import _memory_kb, _server_of, _worker_of
from bench.warm_setup import COLD, warm_server


def _script(turns: int) -> dict[str, Any]:
    rounds: list[dict[str, Any]] = []
    for t in range(turns):
        if t % 10 == 9:
            call = {"id": f"l{t}", "name": "list_dir", "arguments": {}}
            rounds.append({"events": [{"tool_call": call}]})
        rounds.append({"events": [{"text": f"answer {t}: " + "words " * 40}]})
    return {"rounds": rounds}


def _send(stdin: IO[bytes], rid: int, method: str, params: dict[str, Any]) -> None:
    frame = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    stdin.write(json.dumps(frame).encode() + b"\n")
    stdin.flush()


def _until(stdout: IO[bytes], rid: int) -> dict[str, Any]:
    while True:
        frame = json.loads(stdout.readline())
        if frame.get("id") == rid and "method" not in frame:
            return frame["result"]


def held(env: dict[str, str], project: Path, script: Path, turns: int) -> list[dict[str, int]]:
    """The memory of the client's processes after `turns` turns (warm: stand-in, worker)."""
    argv = [sys.executable, "-m", "tether", "acp", "--script", str(script)]
    pipe = subprocess.PIPE
    with subprocess.Popen(argv, stdin=pipe, stdout=pipe, env=env) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        _send(proc.stdin, 0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        _send(proc.stdin, 1, "session/new", {"cwd": str(project), "mcpServers": []})
        sid = _until(proc.stdout, 1)["sessionId"]
        for t in range(turns):
            prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": f"turn {t}"}]}
            _send(proc.stdin, 2 + t, "session/prompt", prompt)
            assert _until(proc.stdout, 2 + t)["stopReason"] == "end_turn"
        found = [_memory_kb(proc.pid)]
        if env.get("TETHER_WARM") == "1":
            worker = _worker_of(proc.pid, env["TETHER_WARM_DIR"])
            assert worker is not None, "no worker serves this start"
            found.append(_memory_kb(worker))
        proc.stdin.close()
        proc.wait(timeout=30)
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, nargs="+", default=[1, 200])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp, "home"), Path(tmp, "project")
        home.mkdir()
        project.mkdir()
        (project / "README.md").write_text("# A project\n")
        env = {**os.environ, "TETHER_HOME": str(home)}
        for turns in args.turns:
            script = Path(tmp, f"script{turns}.json")
            script.write_text(json.dumps(_script(turns)))
            cold = held({**env, **COLD}, project, script, turns)[0]
            with warm_server(env) as warm:
                stand_in, worker = held(warm, project, script, turns)
                server = _memory_kb(_server_of(warm["TETHER_WARM_DIR"]))
            print(f"after {turns} turns: cold process RSS {cold['Rss'] / 1024:.1f} MB")
            for key, name in (("Private", "USS"), ("Pss", "PSS")):
                client = stand_in[key] + worker[key]
                print(f"  warm client {name} {client / 1024:5.1f} MB (stand-in "
                      f"{stand_in[key] / 1024:.1f}, worker {worker[key] / 1024:.1f}) against "
                      f"the cold process's {cold[key] / 1024:5.1f} MB: "
                      f"{client / cold[key]:.2f}x")  # fmt: skip
            print(f"  the warm server: USS {server['Private'] / 1024:.1f} MB, "
                  f"{server['Private'] / cold['Private']:.2f}x the cold process")  # fmt: skip


if __name__ == "__main__":
    main()
