"""Sessions prompting at once: one `tether acp` (cold, `TETHER_WARM=0`) with four sessions,
each sent a prompt at the same moment, against the same process with one session prompted
alone; the loopback model (OpenAI Responses wire) streams each answer at once in many deltas,
so what is timed is the agent's own work per turn (building the request, reading the stream,
sending the chunks, storing the turn) and how it shares one event loop. Printed: the time for a
round of four at once as a ratio to a round of one (4.0x would be no overlap at all; target
<= 2.5x). With `--codex-acp PATH`, Zed's codex-acp is timed the same way in the same run.

    python bench/parallel_sessions.py [--rounds 30] [--sessions 4] [--deltas 200] [--codex-acp PATH]
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

from bench.long_session_model import config
from bench.peer_codex import codex_home
from tests.support.providers.mock_llm_server import MockLLMServer, Recorded, Reply
from tests.support.providers.wire import responses_text


class Model:
    """The loopback model in a process of its own (`--serve`), so that serving the streams
    shares no interpreter lock with this client reading them."""

    def __init__(self, deltas: int) -> None:
        argv = [sys.executable, __file__, "--serve", "--deltas", str(deltas)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().decode().strip()

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def serve(deltas: int) -> None:
    """Answer every request at once with `deltas` text deltas until stdin closes."""
    chunks = responses_text([f"word{i} " for i in range(deltas)])

    def answer(request: Recorded) -> Reply:
        server.requests.clear()
        return Reply(chunks=chunks)

    with MockLLMServer(validate=False) as server:
        server.responder = answer
        print(server.url, flush=True)
        sys.stdin.read()


class Client:
    """An ACP client over real pipes: requests written, answers matched by id."""

    def __init__(self, argv: list[str], env: dict[str, str], project: Path, auth: bool) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.stdout: IO[bytes] = self.proc.stdout
        self.project = project
        self.rid = 0
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        if auth:
            self.call("authenticate", {"methodId": "openai-api-key"})

    def send(self, method: str, params: dict[str, Any]) -> int:
        self.rid += 1
        frame = {"jsonrpc": "2.0", "id": self.rid, "method": method, "params": params}
        self.stdin.write(json.dumps(frame).encode() + b"\n")
        self.stdin.flush()
        return self.rid

    def wait(self, ids: set[int]) -> None:
        while ids:
            line = self.stdout.readline()
            if line.startswith(b'{"jsonrpc":"2.0","method"'):
                continue  # a notification: not parsed (this client's time is not the agent's)
            frame = json.loads(line)
            if "method" not in frame and frame.get("id") in ids:
                if "error" in frame:
                    raise RuntimeError(frame["error"])
                ids.discard(frame["id"])

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = self.send(method, params)
        while True:
            frame = json.loads(self.stdout.readline())
            if "method" not in frame and frame.get("id") == rid:
                return frame["result"]

    def session(self) -> str:
        return self.call("session/new", {"cwd": str(self.project), "mcpServers": []})["sessionId"]

    def round(self, sids: list[str], n: int) -> float:
        started = time.perf_counter()
        prompt = [{"type": "text", "text": f"prompt {n}"}]
        self.wait({self.send("session/prompt", {"sessionId": s, "prompt": prompt}) for s in sids})
        return time.perf_counter() - started

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.terminate()  # codex-acp does not exit when its input ends
            self.proc.wait(timeout=10)
        self.stdout.close()


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user and system, its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(client: Client, sessions: int, rounds: int) -> tuple[float, float, float]:
    """Median round of one session alone, of `sessions` at once (interleaved); the agent's CPU
    time per turn."""
    sids = [client.session() for _ in range(sessions)]
    for n in range(3):  # warm up: the first turns load modules and open connections
        client.round(sids, n)
    one: list[float] = []
    many: list[float] = []
    cpu = cpu_seconds(client.proc.pid)
    for n in range(rounds):
        one.append(client.round(sids[:1], n))
        many.append(client.round(sids, n))
    per_turn = (cpu_seconds(client.proc.pid) - cpu) / (rounds * (1 + sessions))
    return statistics.median(one), statistics.median(many), per_turn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--deltas", type=int, default=200, help="text deltas per answer")
    ap.add_argument("--codex-acp", default=os.environ.get("TETHER_BENCH_CODEX_ACP"))
    ap.add_argument("--profile", help="run tether under cProfile, stats to this file")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        return serve(args.deltas)
    with tempfile.TemporaryDirectory() as tmp, Model(args.deltas) as server:
        home, project = Path(tmp, "home"), Path(tmp, "project")
        home.mkdir()
        project.mkdir()
        (project / "README.md").write_text("# A project\n")
        Path(tmp, "config.toml").write_text(config(server.url))
        env = {**os.environ, "TETHER_HOME": str(home), "TETHER_WARM": "0",
               "TETHER_CONFIG": str(Path(tmp, "config.toml"))}  # fmt: skip
        rows: list[tuple[str, float, float, float]] = []
        argv = [sys.executable, "-m", "tether", "acp"]
        if args.profile:
            argv[1:1] = ["-m", "cProfile", "-o", args.profile]
        tether = Client(argv, env, project, auth=False)
        rows.append(("tether", *measure(tether, args.sessions, args.rounds)))
        tether.close()
        if args.codex_acp:
            codex = codex_home(Path(tmp, "codex"), server.url + "/v1")
            cenv = {**os.environ, "CODEX_HOME": str(codex), "OPENAI_API_KEY": "sk-bench"}
            peer = Client([args.codex_acp], cenv, project, auth=True)
            rows.append(("codex-acp", *measure(peer, args.sessions, args.rounds)))
            peer.close()
    print(f"{args.sessions} sessions prompting at once against one alone "
          f"({args.deltas} deltas an answer; medians of {args.rounds} interleaved rounds)")  # fmt: skip
    for name, one, many, cpu in rows:
        print(f"{name:10} one {one * 1000:7.1f} ms   {args.sessions} at once "
              f"{many * 1000:7.1f} ms   {many / one:.2f}x (target <= 2.5x)   "
              f"CPU {cpu * 1000:.1f} ms a turn")  # fmt: skip


if __name__ == "__main__":
    main()
