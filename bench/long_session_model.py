"""A long session against a loopback model speaking the OpenAI Responses wire (what the issue
measured; `--wire chat` or `--wire anthropic` for the other APIs): `tether acp` (cold,
`TETHER_WARM=0`) talks to a local server that answers every request at once, every tenth turn
with a `list_dir` call first. Each turn is timed from its prompt to its first
`agent_message_chunk`: the wait a user sees, and the work each request costs (building the
request from the whole history, sending it, reading the stream).

Printed as ratios in one run (medians: a turn the machine's other jobs delayed says nothing of
the history): the last 100 turns against the first 100 (target <= 1.2x), and against a fresh
session of the same process prompted among them (what a history of that length costs over
none at the same moment: the request's bytes grow with it). The floor of that growth: the first
and the last request's bytes posted to the same server by a bare client.

    python bench/long_session_model.py [--turns 2000] [--wire responses|chat|anthropic]
        [--profile OUT.prof]
"""

from __future__ import annotations

import argparse
import http.client
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

from tests.support.providers.mock_llm_server import MockLLMServer, Recorded, Reply
from tests.support.providers.wire import (
    ResponsesScript,
    anthropic_block,
    anthropic_end,
    anthropic_start,
    anthropic_text,
    chat_call,
    chat_text,
    responses_text,
)

TEXT = ["answer: ", "words " * 40]
KINDS = {"responses": "openai-responses", "chat": "openai", "anthropic": "anthropic"}


def _answer(wire_api: str, call_id: str | None) -> Reply:
    """A text answer, or a `list_dir` call, in the wire's own stream format."""
    if wire_api == "chat":
        return Reply(chunks=chat_call("list_dir", {}, call_id) if call_id else chat_text(TEXT))
    if wire_api == "anthropic":
        if call_id is None:
            return Reply(chunks=anthropic_text(TEXT))
        block = {"type": "tool_use", "id": call_id, "name": "list_dir", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": "{}"}
        chunks = [anthropic_start(), *anthropic_block(0, block, [delta])]
        return Reply(chunks=[*chunks, *anthropic_end("tool_use")])
    if call_id is None:
        return Reply(chunks=responses_text(TEXT))
    script = ResponsesScript().created().call(0, call_id, "list_dir", ["{}"])
    return Reply(chunks=script.completed())


class Model:
    """The loopback model: a `list_dir` call for the first request of a turn the bench marks,
    else text. Bodies are not kept (they reach 1 MB)."""

    def __init__(self, server: MockLLMServer, wire_api: str) -> None:
        self.server = server
        self.wire_api = wire_api
        self.call_next = False
        self.calls = 0
        self.last_bytes = 0
        self.bodies: dict[str, bytes] = {}  # the first and the last request, for the floor

    def __call__(self, request: Recorded) -> Reply:
        self.server.requests.clear()
        self.last_bytes = len(request.body)
        self.bodies.setdefault("first", request.body)
        self.bodies["last"] = request.body
        if self.call_next:
            self.call_next = False
            self.calls += 1
            return _answer(self.wire_api, f"call_{self.calls}")
        return _answer(self.wire_api, None)


def _send(stdin: IO[bytes], rid: int, method: str, params: dict[str, Any]) -> None:
    frame = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    stdin.write(json.dumps(frame).encode() + b"\n")
    stdin.flush()


def _until(stdout: IO[bytes], rid: int) -> dict[str, Any]:
    while True:
        frame = json.loads(stdout.readline())
        if frame.get("id") == rid and "method" not in frame:
            return frame


def _first_chunk_then_answer(stdout: IO[bytes], rid: int, started: float) -> float:
    first = 0.0
    while True:
        line = stdout.readline()
        if not first and b'"agent_message_chunk"' in line:
            first = time.perf_counter() - started
        frame = json.loads(line)
        if frame.get("id") == rid and "method" not in frame:
            assert frame["result"]["stopReason"] == "end_turn", frame
            return first


class Agent:
    def __init__(self, env: dict[str, str], project: Path, profile: str | None) -> None:
        argv = [sys.executable, "-m", "tether", "acp"]
        if profile:
            argv = [sys.executable, "-m", "cProfile", "-o", profile, "-m", "tether", "acp"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.project = project
        self.rid = 0
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.rid += 1
        _send(self.stdin, self.rid, method, params)
        return _until(self.stdout, self.rid)

    def new_session(self) -> str:
        return self.call("session/new", {"cwd": str(self.project), "mcpServers": []})["result"][
            "sessionId"
        ]

    def prompt(self, sid: str, text: str) -> float:
        self.rid += 1
        started = time.perf_counter()
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
        _send(self.stdin, self.rid, "session/prompt", prompt)
        return _first_chunk_then_answer(self.stdout, self.rid, started)

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(timeout=60)
        self.stdout.close()


def config(url: str, wire_api: str = "responses") -> str:
    base = url if wire_api == "anthropic" else f"{url}/v1"
    return (
        f'[providers.bench]\nkind = "{KINDS[wire_api]}"\n'
        f'base_url = "{base}"\napi_key = "sk-bench"\nbuiltin_models = false\n'
        '[models."bench:gpt-5.5"]\ncontext_window = 10000000\nmax_output_tokens = 4096\n'
        '[defaults]\nmodel = "bench:gpt-5.5"\n'
    )


def run(turns: int, fresh_every: int, profile: str | None, wire_api: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, MockLLMServer(validate=False) as server:
        model = Model(server, wire_api)
        server.responder = model
        home, project = Path(tmp, "home"), Path(tmp, "project")
        home.mkdir()
        project.mkdir()
        (project / "README.md").write_text("# A project\n")
        Path(tmp, "config.toml").write_text(config(server.url, wire_api))
        env = {**os.environ, "TETHER_HOME": str(home), "TETHER_WARM": "0",
               "TETHER_CONFIG": str(Path(tmp, "config.toml"))}  # fmt: skip
        agent = Agent(env, project, profile)
        sid = agent.new_session()
        times: list[float] = []
        fresh: list[float] = []
        sizes: dict[str, int] = {}
        other = ""
        for t in range(turns):
            if t == turns - 100:  # a fresh session beside the long one (its first turn untimed)
                other = agent.new_session()
                agent.prompt(other, "hello")
            model.call_next = t % 10 == 9
            times.append(agent.prompt(sid, f"turn {t}"))
            if t == 0:
                sizes["first"] = model.last_bytes
            if other and t % fresh_every == 0:  # interleaved with the long session's turns
                model.call_next = False
                fresh.append(agent.prompt(other, f"hello {t}"))
        model.call_next = False
        times.append(agent.prompt(sid, "last"))
        sizes["last"] = model.last_bytes
        agent.close()
        floor = bare_posts(server.url, PATHS[wire_api], model.bodies)
    return {"times": times[:turns], "fresh": fresh, "sizes": sizes, "floor": floor}


PATHS = {"responses": "/v1/responses", "chat": "/v1/chat/completions", "anthropic": "/v1/messages"}


def bare_posts(url: str, path: str, bodies: dict[str, bytes], runs: int = 21) -> dict[str, float]:
    """The floor: the first and the last request's bytes posted by a bare client (one kept
    connection), timed to the answer's first bytes; medians, interleaved."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port))
    headers = {"content-type": "application/json"}
    took: dict[str, list[float]] = {"first": [], "last": []}
    for _ in range(runs):
        for which, body in bodies.items():
            started = time.perf_counter()
            conn.request("POST", path, body, headers)
            answer = conn.getresponse()
            answer.read(1)
            took[which].append(time.perf_counter() - started)
            answer.read()
    conn.close()
    return {which: statistics.median(t) for which, t in took.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--fresh-every", type=int, default=5)
    ap.add_argument("--profile", help="run tether under cProfile, stats to this file")
    ap.add_argument("--wire", choices=sorted(KINDS), default="responses")
    args = ap.parse_args()
    got = run(args.turns, args.fresh_every, args.profile, args.wire)
    times, fresh, sizes = got["times"], got["fresh"], got["sizes"]
    # medians: a turn the machine's other jobs delayed says nothing of the history's cost
    first = statistics.median(times[:100]) * 1000
    last = statistics.median(times[-100:]) * 1000
    new = statistics.median(fresh) * 1000
    late = f"turns {args.turns - 99}-{args.turns}"
    print(f"{args.turns} turns in one session, loopback model on the {args.wire} wire "
          "(every tenth turn a tool call)")  # fmt: skip
    print(f"prompt -> first chunk, turns 1-100     median {first:7.2f} ms "
          f"(mean {statistics.mean(times[:100]) * 1000:.2f})")  # fmt: skip
    print(f"prompt -> first chunk, {late:15} median {last:7.2f} ms "
          f"(mean {statistics.mean(times[-100:]) * 1000:.2f})  "
          f"{last / first:.2f}x turns 1-100 (target <= 1.2x)")  # fmt: skip
    print(f"a fresh session, prompted among them   median {new:7.2f} ms  "
          f"{last / new:.2f}x it ({len(fresh)} prompts)")  # fmt: skip
    print(f"request body: turn 1 {sizes['first'] / 1024:.0f} KB, "
          f"turn {args.turns + 1} {sizes['last'] / 1024:.0f} KB")  # fmt: skip
    small, big = got["floor"]["first"] * 1000, got["floor"]["last"] * 1000
    print(f"floor: those two bodies posted by a bare client, to the answer's first bytes: "
          f"{small:.2f} ms, {big:.2f} ms ({big - small:+.2f} ms)")  # fmt: skip


if __name__ == "__main__":
    main()
