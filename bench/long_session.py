"""A day of work in one session: N turns through `tether acp` over real pipes (a scripted model
that answers at once, every tenth turn with a tool call first), timing each turn from its prompt
to its answer. Targets: the mean turn of the last 100 within 1.2x the first 100 (what a long
history adds per turn), and the process's resident memory bounded (printed: after the first
100 turns and at the end). Then the replay target carried over from the sessions work:
`bench/replay.py --messages 10000`, under 2x the encoding of the same frames. Last,
`bench/long_session_model.py`: prompt -> first chunk over 2,000 turns against a loopback model
(the history's encoding, sizing and sending), to turns 1-100 and to a fresh session.

    python bench/long_session.py [--turns 1000] [--model-turns 2000]
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
from typing import IO, Any


def _script(turns: int) -> dict[str, Any]:
    rounds: list[dict[str, Any]] = []
    for t in range(turns):
        if t % 10 == 9:
            call = {"id": f"l{t}", "name": "list_dir", "arguments": {}}
            rounds.append({"events": [{"tool_call": call}]})
        rounds.append({"events": [{"text": f"answer {t}: " + "words " * 40}]})
    return {"model": {"context_window": 10_000_000, "max_output_tokens": 4096}, "rounds": rounds}


def _send(stdin: IO[bytes], frame: dict[str, Any]) -> None:
    stdin.write(json.dumps(frame).encode() + b"\n")
    stdin.flush()


def _until(stdout: IO[bytes], rid: int) -> dict[str, Any]:
    while True:
        frame = json.loads(stdout.readline())
        if frame.get("id") == rid and "method" not in frame:
            return frame


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def run(turns: int) -> tuple[list[float], int, int]:
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp, "home"), Path(tmp, "project")
        home.mkdir()
        project.mkdir()
        (project / "README.md").write_text("# A project\n")
        script = Path(tmp, "script.json")
        script.write_text(json.dumps(_script(turns)))
        # a cold start: the agent is this process (its memory is what is measured)
        env = {**os.environ, "TETHER_HOME": str(home), "TETHER_WARM": "0"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "tether", "acp", "--script", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert proc.stdin is not None and proc.stdout is not None
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                           "params": {"protocolVersion": 1, "clientCapabilities": {}}})  # fmt: skip
        _until(proc.stdout, 0)
        new = {"cwd": str(project), "mcpServers": []}
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": new})
        sid = _until(proc.stdout, 1)["result"]["sessionId"]
        times: list[float] = []
        early_rss = 0
        for t in range(turns):
            prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": f"turn {t}"}]}
            started = time.perf_counter()
            _send(proc.stdin, {"jsonrpc": "2.0", "id": 2 + t, "method": "session/prompt",
                               "params": prompt})  # fmt: skip
            answer = _until(proc.stdout, 2 + t)
            times.append(time.perf_counter() - started)
            assert answer["result"]["stopReason"] == "end_turn", answer
            if t == 99:
                early_rss = _rss_kb(proc.pid)
        late_rss = _rss_kb(proc.pid)
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
    return times, early_rss, late_rss


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--model-turns", type=int, default=2000, help="0: skip the loopback model")
    args = ap.parse_args()
    times, early_rss, late_rss = run(args.turns)
    first = statistics.mean(times[:100]) * 1000
    last = statistics.mean(times[-100:]) * 1000
    ratio = last / first
    print(f"{args.turns} turns in one session (every tenth with a tool call)")
    print(f"first 100 turns  mean {first:7.2f} ms per turn")
    print(f"last 100 turns   mean {last:7.2f} ms per turn  {ratio:.2f}x (target <= 1.2x)")
    growth = (late_rss - early_rss) / 1024
    print(f"RSS after 100 turns {early_rss / 1024:.1f} MB, at the end {late_rss / 1024:.1f} MB "
          f"(+{growth:.1f} MB over {args.turns - 100} turns)")  # fmt: skip
    print("replay of 10,000 messages:")
    here = Path(__file__).parent
    subprocess.run([sys.executable, str(here / "replay.py"), "--messages", "10000"], check=True)
    if args.model_turns:  # prompt -> first chunk against a loopback model (the Responses wire)
        model = [sys.executable, str(here / "long_session_model.py")]
        subprocess.run([*model, "--turns", str(args.model_turns)], check=True)


if __name__ == "__main__":
    main()
