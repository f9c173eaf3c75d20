"""Replay: a stored session of N messages (user prompts, agent answers, tool calls with diffs)
loaded by a client over real pipes (`session/load`: every update replayed, then the answer),
against the floor measured in the same run: a bare Python child, already running, writing the
same encoded frames to the same kind of pipe when asked (request -> last frame, as for tether).
The figure to watch is the load's time and ratio against earlier runs. Also shown: translating and encoding the frames in this
process (tether's own work, without reading the store or writing the pipe).

Also shown: the first load of the same session as an older tether stored it (no renderings
beside the events: each is decoded and translated, and the renderings are kept for next time).

    python bench/replay.py [--messages 10000] [--runs 3]
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

import anyio
import apsw
import msgspec

from tether.engine import events as ev
from tether.engine.history import (
    AssistantMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    UserPart,
)
from tether.engine.sessions.state import Session, SessionState
from tether.engine.sessions.store import Store
from tether.rpc.acp.replay_frames import acp_renderer
from tether.rpc.acp.translate import replay
from tether.schemas import acp


def build(session: Session, n: int) -> None:
    """n messages in rounds of four: a prompt, a call, its result, an answer."""
    for i in range(n // 4):
        parts: list[UserPart] = [TextPart(f"question {i}: please change file_{i}.py")]
        session.history.append(UserMessage(parts))
        session.record(ev.UserPrompted(parts, message=len(session.history) - 1))
        call = ToolCall(f"c{i}", "write_file", json.dumps({"path": f"file_{i}.py"}))
        session.history.append(AssistantMessage("", tool_calls=[call]))
        path = f"{session.cwd}/file_{i}.py"
        diff = ev.DiffOut(path, f"print({i})\n" * 5, f"print({i - 1})\n" * 5)
        session.record(
            ev.ToolStarted(
                call.id,
                "write_file",
                f"Replace file_{i}.py",
                "edit",
                {"path": path},
                [ev.Location(path)],
                [diff],
            )
        )
        session.record(ev.ToolFinished(call.id, "completed", [diff]))
        session.history.append(ToolResultMessage(call.id, "write_file", f"replaced file_{i}.py"))
        answer = f"I changed file_{i}.py as asked. " * 4
        session.history.append(AssistantMessage(answer))
        session.record(ev.TextDelta(f"m{i}", answer))
        session.record(ev.UsageSampled(1000 + i, 200_000))


async def make_store(home: Path, n: int) -> tuple[str, list[ev.Event]]:
    store = Store(home / "tether.db", acp_renderer())  # as `tether acp` stores a session
    s = Session("sess_bench", str(home), SessionState(model="demo"))
    build(s, n)
    events = list(s.pending_events)
    await store.save(s)
    await store.close()
    return s.id, events


def encode_only(events: list[ev.Event], sid: str) -> tuple[float, bytes]:
    """Seconds to translate and encode the replay's frames, and the frames (one per line)."""
    start = time.perf_counter()
    enc = msgspec.json.Encoder()
    lines = [
        enc.encode(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": acp.SessionNotification(session_id=sid, update=u),
            }
        )
        for u in replay(events, notices=False)
    ]
    took = time.perf_counter() - start
    return took, b"\n".join(lines) + b'\n{"jsonrpc":"2.0","id":1,"result":{}}\n'


def floor(frames: bytes, directory: Path) -> float:
    """A running bare child asked for the same frames: request -> the answer after the last."""
    path = directory / "frames.ndjson"
    path.write_bytes(frames)
    code = (
        f"import sys; data = open({str(path)!r}, 'rb').read(); sys.stdin.readline(); "
        "sys.stdout.buffer.write(data); sys.stdout.flush()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    time.sleep(0.2)  # it is up and has read the file
    start = time.perf_counter()
    proc.stdin.write(b"go\n")
    proc.stdin.flush()
    while b'"id":1' not in proc.stdout.readline():
        pass
    took = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    return took


def load(home: Path, sid: str) -> tuple[float, int]:
    env = {**os.environ, "TETHER_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "acp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    warm = {"jsonrpc": "2.0", "id": 9, "method": "session/list", "params": {}}
    proc.stdin.write(json.dumps(init).encode() + b"\n" + json.dumps(warm).encode() + b"\n")
    proc.stdin.flush()
    while b'"id":9' not in proc.stdout.readline():  # the agent is up: time the load alone
        pass
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/load",
        "params": {"sessionId": sid, "cwd": str(home), "mcpServers": []},
    }
    start = time.perf_counter()
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    frames = 0
    while True:
        line = proc.stdout.readline()
        if b'"id":1' in line:
            break
        frames += 1
    took = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(timeout=30)
    return took, frames


def forget_renderings(home: Path) -> None:
    db = apsw.Connection(str(home / "tether.db"))
    db.execute("UPDATE events SET shown=NULL, shown_by=NULL")
    db.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        sid, events = anyio.run(make_store, home, args.messages)
        base: list[float] = []
        floors: list[float] = []
        ours: list[float] = []
        cold: list[float] = []
        frames = 0
        for _ in range(args.runs):
            encoding, lines = encode_only(events, sid)
            base.append(encoding)
            floors.append(floor(lines, home))
            took, frames = load(home, sid)
            ours.append(took)
            forget_renderings(home)
            cold.append(load(home, sid)[0])
    b, t, c = statistics.median(base), statistics.median(ours), statistics.median(cold)
    f = statistics.median(floors)
    print(f"{args.messages} messages, {frames} replayed frames")
    print(f"floor: a bare child writing the frames median {f * 1000:8.1f} ms")
    print(f"translate + encode the frames only  median {b * 1000:8.1f} ms  {b / f:.2f}x")
    print(f"session/load, end to end            median {t * 1000:8.1f} ms  {t / f:.2f}x")
    print(f"  stored by an older tether         median {c * 1000:8.1f} ms  {c / f:.2f}x")
    print(f"ratio {t / f:.2f}x the floor")


if __name__ == "__main__":
    main()
