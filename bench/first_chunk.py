"""Where the user's wait ends: spawn `tether acp`, write `initialize`, `session/new` and a
`session/prompt` back to back at once (as an editor that opens a chat and sends a message does),
and time the first `agent_message_chunk`. The model is a loopback OpenAI-compatible server that
answers at once. The floor, measured in the same run: spawning a bare `python -c pass`. Both
starts are timed (bench/warm_setup.py): warm (a worker of the user's warm server: every start
but the first after a boot, an upgrade or a long idle) and cold (in-process: that first one).

Then, with the engine loaded (the same process, later prompts): prompt -> first chunk, against
the floor of a round trip through a bare Python child echoing one line.

    python bench/first_chunk.py [--runs 15] [--codex-acp PATH]

With `--codex-acp` (or TETHER_BENCH_CODEX_ACP), the native peer the issue names is timed the
same way in the same run, interleaved (bench/peer_codex.py), and tether's warm start is printed
as a ratio to it too.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.peer_codex import codex_first_chunk, codex_home
from bench.warm_setup import COLD, warm_server
from tests.providers.mock_llm_server import MockLLMServer, Recorded, Reply
from tests.providers.wire import chat_text, responses_text


def _frames(project: Path, sid: str | None = None, rid: int = 2) -> list[dict[str, Any]]:
    init = {"protocolVersion": 1, "clientCapabilities": {}}
    new = {"cwd": str(project), "mcpServers": []}
    out: list[dict[str, Any]] = []
    if sid is None:
        out.append({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        out.append({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": new})
        sid = "$FROM_NEW"
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}
    out.append({"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": prompt})
    return out


def _answer(request: Recorded) -> Reply:
    if request.method == "GET":
        body = json.dumps({"object": "list", "data": [{"id": "gpt-5.5", "object": "model"}]})
        return Reply(body=body.encode(), headers={"content-type": "application/json"})
    if request.path.endswith("/responses"):  # the native peer's wire
        return Reply(chunks=responses_text(["Hello", " there."]))
    return Reply(chunks=chat_text(["Hello", " there."]))


def _first_chunk(stdout: IO[bytes]) -> float:
    for line in stdout:
        if b'"agent_message_chunk"' in line:
            return time.perf_counter()
    raise RuntimeError("no chunk")


def _until(stdout: IO[bytes], rid: int) -> dict[str, Any]:
    for line in stdout:
        frame = json.loads(line)
        if frame.get("id") == rid and "method" not in frame:
            return frame
    raise RuntimeError(f"no answer to {rid}")


def cold(env: dict[str, str], project: Path) -> float:
    """Spawn -> first chunk, the three requests written at once (the session id is not known
    yet, so the prompt goes right after `session/new`'s answer: no later than a client can)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "acp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    init, new, prompt = _frames(project)
    proc.stdin.write(json.dumps(init).encode() + b"\n" + json.dumps(new).encode() + b"\n")
    proc.stdin.flush()
    sid = _until(proc.stdout, 1)["result"]["sessionId"]
    prompt["params"]["sessionId"] = sid
    proc.stdin.write(json.dumps(prompt).encode() + b"\n")
    proc.stdin.flush()
    took = _first_chunk(proc.stdout) - started
    _until(proc.stdout, 2)
    proc.stdin.close()
    proc.wait(timeout=30)
    proc.stdout.close()
    return took


def loaded_prompts(env: dict[str, str], project: Path, prompts: int) -> list[float]:
    """Prompt -> first chunk in a process whose engine is loaded (after a first turn)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "acp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    init, new, _ = _frames(project)
    for f in (init, new):
        proc.stdin.write(json.dumps(f).encode() + b"\n")
    proc.stdin.flush()
    sid = _until(proc.stdout, 1)["result"]["sessionId"]
    times: list[float] = []
    for n in range(prompts + 1):
        [prompt] = _frames(project, sid, 2 + n)
        started = time.perf_counter()
        proc.stdin.write(json.dumps(prompt).encode() + b"\n")
        proc.stdin.flush()
        first = _first_chunk(proc.stdout)
        _until(proc.stdout, 2 + n)
        if n:  # the first turn loads what turns need
            times.append(first - started)
    proc.stdin.close()
    proc.wait(timeout=30)
    proc.stdout.close()
    return times


def bare_spawn() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def echo_round_trips(count: int) -> list[float]:
    """A bare Python child echoing one line per line: the floor of a request -> reply."""
    code = "import sys\nfor line in sys.stdin: sys.stdout.write(line); sys.stdout.flush()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    times: list[float] = []
    for _ in range(count):
        started = time.perf_counter()
        proc.stdin.write(b"ping\n")
        proc.stdin.flush()
        proc.stdout.readline()
        times.append(time.perf_counter() - started)
    proc.stdin.close()
    proc.wait()
    proc.stdout.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--codex-acp", default=os.environ.get("TETHER_BENCH_CODEX_ACP"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, MockLLMServer(validate=False) as server:
        server.responder = _answer
        home, project = Path(tmp, "home"), Path(tmp, "project")
        home.mkdir()
        project.mkdir()
        (project / "README.md").write_text("# A project\n")
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        env = {
            **os.environ,
            "TETHER_HOME": str(home),
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": server.url + "/v1",
            "TETHER_MODEL": "openai:gpt-5.5",
        }
        cold({**env, **COLD}, project)  # the first start caches the session/new answer
        peer: list[float] = []
        codex = codex_home(Path(tmp, "codex"), server.url + "/v1")
        if args.codex_acp:
            codex_first_chunk(args.codex_acp, codex, project)  # its first start writes its state
        with warm_server(env) as warm:
            rows: list[tuple[float, float, float]] = []
            for _ in range(args.runs):
                rows.append((bare_spawn(), cold(warm, project), cold({**env, **COLD}, project)))
                if args.codex_acp:
                    peer.append(codex_first_chunk(args.codex_acp, codex, project))
            loaded = statistics.median(loaded_prompts(warm, project, 20))
        echo = statistics.median(echo_round_trips(50))
    floor = statistics.median(r[0] for r in rows)
    served = statistics.median(r[1] for r in rows)
    first = statistics.median(r[2] for r in rows)
    print(f"python -c pass (spawn floor)               median {floor * 1000:7.1f} ms")
    print(
        f"spawn -> first chunk, warm start           median {served * 1000:7.1f} ms  "
        f"{served / floor:.1f}x (target <= 10x without a native peer)"
    )
    print(
        f"spawn -> first chunk, cold start           median {first * 1000:7.1f} ms  "
        f"{first / floor:.1f}x (the first start after a boot, an upgrade or a long idle)"
    )
    if peer:
        native = statistics.median(peer)
        print(
            f"spawn -> first chunk, codex-acp (native)   median {native * 1000:7.1f} ms  "
            f"{native / floor:.1f}x; tether warm {served / native:.2f}x it (target <= 1.3x)"
        )
    print(f"bare child echo round trip (floor)         median {echo * 1e6:7.1f} us")
    print(
        f"prompt -> first chunk, engine loaded       median {loaded * 1000:7.2f} ms  "
        f"{loaded / echo:.0f}x the echo (target < 15 ms)"
    )


if __name__ == "__main__":
    main()
