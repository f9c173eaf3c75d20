"""Streaming: agent_message_chunk frames per second end to end, `tether acp` with the scripted
provider emitting N deltas, read by a raw client over real pipes. The baseline, measured in the
same run, is a bare Python child writing the same number of pre-encoded frames to the same pipe:
both are timed from their first frame to their last (spawning the child, like tether's turn
setup, is not streaming), and the ratio is of those times.

With `--adapter`, the deltas come instead from the OpenAI-compatible adapter reading a loopback
server that speaks the chat-completions SSE format: the report adds the adapter's overhead per
delta (its run less the scripted run, same N, same process) and the time from the server's first
body byte to the client receiving the first agent_message_chunk.

    python bench/stream.py [--deltas 20000] [--runs 3] [--adapter]
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


def _until_id(proc: subprocess.Popen[bytes], rid: int) -> tuple[int, float, float]:
    """Read frames until the response with `rid`: (message chunks before it, when the first
    came, when the last came)."""
    assert proc.stdout is not None
    chunks, first, last = 0, 0.0, 0.0
    for line in proc.stdout:
        if b'"agent_message_chunk"' in line:
            last = time.perf_counter()
            if not chunks:
                first = last
            chunks += 1
        elif b'"id":%d' % rid in line and b'"method"' not in line:
            return chunks, first, last
    raise RuntimeError("agent exited")


def tether_run(
    deltas: int, home: Path, project: Path, server_url: str | None = None
) -> tuple[float, int, float, float]:
    """(seconds for the prompt, chunks seen, perf_counter() when the first chunk arrived, and
    when the last did)."""
    env = {**os.environ, "TETHER_HOME": str(home), "TETHER_CONFIG": str(home / "none.toml")}
    if server_url is None:
        script = home / "stream.json"
        turn = {"rounds": [{"events": [{"text": "tok ", "repeat": deltas}]}]}
        script.write_text(json.dumps(turn))
        cmd = [sys.executable, "-m", "tether", "acp", "--script", str(script)]
    else:
        env |= {
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": server_url,
            "TETHER_MODEL": "openai:gpt-4.1",
        }
        cmd = [sys.executable, "-m", "tether", "acp"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
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
    chunks, first, last = _until_id(proc, 2)
    elapsed = time.perf_counter() - start
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)
    return elapsed, chunks, first, last


def baseline_run(deltas: int) -> float:
    """A bare child writing the frames: seconds from its first frame read to its last."""
    code = f"import sys; w=sys.stdout.buffer.write; c={CHUNK!r}\nfor _ in range({deltas}): w(c)\nsys.stdout.flush()"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    n, first, last = 0, 0.0, 0.0
    for _ in proc.stdout:
        last = time.perf_counter()
        if not n:
            first = last
        n += 1
    proc.wait()
    assert n == deltas
    return last - first


PAUSE = 0.05


def adapter_runs(deltas: int, runs: int, home: Path, project: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.providers.mock_llm_server import MockLLMServer, Reply
    from tests.support.providers.wire import chat_chunk, chat_end

    first = chat_chunk({"role": "assistant", "content": ""}) + chat_chunk({"content": "tok "})
    rest = b"".join(chat_chunk({"content": "tok "}) for _ in range(deltas - 1))
    rest += b"".join(c for c in chat_end() if isinstance(c, bytes))
    # The first delta alone, then a pause, so its latency is measured on its own; the rest in
    # 16 KiB HTTP chunks, so the server in this process is never what limits the rate.
    body: list[bytes | float] = [first, PAUSE]
    body += [rest[i : i + 16384] for i in range(0, len(rest), 16384)]
    scripted, adapted, firsts = [], [], []
    with MockLLMServer() as server:
        for _ in range(runs):
            scripted.append(tether_run(deltas, home, project)[0])
            server.first_body_byte_at = None
            server.script("/chat/completions", Reply(chunks=list(body)))
            elapsed, chunks, first, _ = tether_run(deltas, home, project, server.url)
            assert chunks == deltas, (chunks, deltas)
            assert server.first_body_byte_at is not None
            adapted.append(elapsed - PAUSE)
            firsts.append(first - server.first_body_byte_at)
    s, a = statistics.median(scripted), statistics.median(adapted)
    print(
        f"through the OpenAI adapter: {deltas / a:,.0f} frames/s ({a / deltas * 1e6:.1f} us per delta)"
    )
    print(f"scripted provider, same run: {deltas / s:,.0f} frames/s")
    print(f"adapter overhead per delta: {(a - s) / deltas * 1e6:.1f} us (target: under 50 us)")
    print(
        f"server's first byte -> first agent_message_chunk: {statistics.median(firsts) * 1000:.2f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--deltas", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--adapter", action="store_true", help="stream through the OpenAI adapter")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        if args.adapter:
            adapter_runs(args.deltas, args.runs, home, project)
            return
        ours, base = [], []
        for _ in range(args.runs):
            _, chunks, first, last = tether_run(args.deltas, home, project)
            assert chunks == args.deltas, (chunks, args.deltas)
            ours.append(last - first)
            base.append(baseline_run(args.deltas))
    t, b = statistics.median(ours), statistics.median(base)
    print(
        f"tether: {args.deltas} agent_message_chunk frames, first to last, in {t:.3f} s = {args.deltas / t:,.0f} frames/s"
    )
    print(
        f"floor (a bare child writing the same frames, first to last): {args.deltas / b:,.0f} frames/s"
    )
    print(
        f"ratio {t / b:.2f}x the floor's time; {t / args.deltas * 1e6:.1f} us per delta (target: >= 20,000 frames/s)"
    )


if __name__ == "__main__":
    main()
