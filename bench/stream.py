"""Streaming: agent_message_chunk frames per second end to end, `tether acp` with the scripted
provider emitting N deltas, read by a raw client over real pipes. The baseline, measured in the
same run, is a bare Python child writing the same number of pre-encoded frames to the same pipe.

    python bench/stream.py [--deltas 20000] [--runs 3]
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

CHUNK = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"tok "},"messageId":"m"}}}\n'


def _send(proc: subprocess.Popen[bytes], obj: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(obj).encode() + b"\n")
    proc.stdin.flush()


def _until_id(proc: subprocess.Popen[bytes], rid: int) -> int:
    """Read frames until the response with `rid`; returns how many message chunks came first."""
    assert proc.stdout is not None
    chunks = 0
    for line in proc.stdout:
        if b'"agent_message_chunk"' in line:
            chunks += 1
        elif b'"id":%d' % rid in line and b'"method"' not in line:
            return chunks
    raise RuntimeError("agent exited")


def tether_run(deltas: int, home: Path, project: Path) -> tuple[float, int]:
    script = home / "stream.json"
    script.write_text(json.dumps({"rounds": [{"events": [{"text": "tok ", "repeat": deltas}]}]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "acp", "--script", str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "TETHER_HOME": str(home)},
    )
    _send(
        proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    _until_id(proc, 0)
    _send(
        proc,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": str(project), "mcpServers": []},
        },
    )
    assert proc.stdout is not None
    sid = json.loads(proc.stdout.readline())["result"]["sessionId"]
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
    start = time.perf_counter()
    _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt})
    chunks = _until_id(proc, 2)
    elapsed = time.perf_counter() - start
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)
    return elapsed, chunks


def baseline_run(deltas: int) -> float:
    code = f"import sys; w=sys.stdout.buffer.write; c={CHUNK!r}\nfor _ in range({deltas}): w(c)\nsys.stdout.flush()"
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    n = sum(1 for _ in proc.stdout)
    proc.wait()
    assert n == deltas
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--deltas", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        ours, base = [], []
        for _ in range(args.runs):
            elapsed, chunks = tether_run(args.deltas, home, project)
            assert chunks == args.deltas, (chunks, args.deltas)
            ours.append(elapsed)
            base.append(baseline_run(args.deltas))
    t, b = statistics.median(ours), statistics.median(base)
    print(
        f"tether: {args.deltas} agent_message_chunk frames in {t:.3f} s = {args.deltas / t:,.0f} frames/s"
    )
    print(f"baseline (bare child writing the same frames): {args.deltas / b:,.0f} frames/s")
    print(
        f"ratio {t / b:.2f}x the baseline's time; {t / args.deltas * 1e6:.1f} us per delta (target: >= 20,000 frames/s)"
    )


if __name__ == "__main__":
    main()
