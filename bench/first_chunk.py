"""Where the user's wait ends: spawn `tether acp`, write `initialize`, `session/new` and a
`session/prompt` back to back at once (as an editor that opens a chat and sends a message does),
and time the first `agent_message_chunk` carrying the model's text. The model is a loopback
OpenAI-compatible server that answers at once. The floor, measured in the same run: spawning a
bare `python -c pass`. Both starts are timed (bench/warm_setup.py): cold (the warm server off,
TETHER_WARM=0: the engine imported in the process) and warm (a worker of the user's warm
server). Also timed cold: importing what a cold start imports before its first chunk (the ACP
front, the composition and the HTTP stack, as `rpc/startup.py`'s `preload` does; the tools load
when a call names one), as a process: spawn -> imported.

Python's bytecode is cached as an installed tether's is (pip compiles it at install; a user's
first run writes it): the children get a private PYTHONPYCACHEPREFIX, filled by a first start,
and never PYTHONDONTWRITEBYTECODE (which would make every start compile tether's source).

Then, with the engine loaded (the same process, later prompts): prompt -> first chunk, against
the floor of a round trip through a bare Python child echoing one line.

    python bench/first_chunk.py [--runs 21] [--codex-acp PATH] [--before CHECKOUT]

With `--codex-acp` (or TETHER_BENCH_CODEX_ACP), the native peer the issue names is timed the
same way in the same run, interleaved (bench/peer_codex.py; its first chunk of the model's
text, not a notice it may send at once), and tether's starts and import are printed as ratios
to it too, with the CPU each used by its first chunk (its own threads, read from /proc): on a
machine other work loads, the wall times follow the CPU, and its ratio moves less. With
`--before`, the cold start of another checkout (an older commit, say) is timed in the same
run. `npm install @zed-industries/codex-acp` in any directory, then pass
`node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp`.
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

from bench.peer_codex import MODEL_TEXT, codex_first_chunk, codex_home, model_text_chunk, own_cpu
from bench.warm_setup import COLD, warm_server
from tests.support.providers.mock_llm_server import MockLLMServer, Recorded, Reply
from tests.support.providers.wire import chat_text, responses_text


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
        return Reply(chunks=responses_text([MODEL_TEXT, " there."]))
    return Reply(chunks=chat_text([MODEL_TEXT, " there."]))


def _first_chunk(stdout: IO[bytes]) -> float:
    for line in stdout:
        if model_text_chunk(line):
            return time.perf_counter()
    raise RuntimeError("no chunk")


def bytecode_env(cache: Path) -> dict[str, str]:
    """The environment of a child whose bytecode is cached in `cache` (see the docstring)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(cache)}


IMPORT = (
    "from tether.rpc.startup import preload; "
    "preload('tether.rpc.acp.acp_stream', 'tether.rpc.acp.agent')"
)


def cold_import(env: dict[str, str]) -> float:
    """Spawn -> what a cold start imports before its first chunk is imported."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", IMPORT], env=env, check=True)
    return time.perf_counter() - started


def _until(stdout: IO[bytes], rid: int) -> dict[str, Any]:
    for line in stdout:
        frame = json.loads(line)
        if frame.get("id") == rid and "method" not in frame:
            return frame
    raise RuntimeError(f"no answer to {rid}")


def cold(
    env: dict[str, str], project: Path, cpu: list[float] | None = None, cwd: str | None = None
) -> float:
    """Spawn -> first chunk, the three requests written at once (the session id is not known
    yet, so the prompt goes right after `session/new`'s answer: no later than a client can);
    `cpu` gets the CPU the process used by then (`own_cpu`); `cwd`: where it starts (`-m`
    imports tether from there first)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "acp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        cwd=cwd,
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
    if cpu is not None:
        cpu.append(own_cpu(proc.pid))
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


def _before(tree: str, off: dict[str, str], tmp: Path) -> dict[str, str]:
    """The cold environment of the checkout `tree` (its own data dir and bytecode), its first
    start done."""
    (tmp / "home-before").mkdir()
    env = {**off, "PYTHONPATH": tree, "TETHER_HOME": str(tmp / "home-before")}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache-before")
    cold(env, Path(tmp, "project"), cwd=tree)
    return env


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
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--codex-acp", default=os.environ.get("TETHER_BENCH_CODEX_ACP"))
    ap.add_argument("--before", help="another tether checkout, its cold start timed too")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, MockLLMServer(validate=False) as server:
        server.responder = _answer
        home, project = Path(tmp, "home"), Path(tmp, "project")
        home.mkdir()
        project.mkdir()
        (project / "README.md").write_text("# A project\n")
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        env = {
            **bytecode_env(Path(tmp, "pycache")),
            "TETHER_HOME": str(home),
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": server.url + "/v1",
            "TETHER_MODEL": "openai:gpt-5.5",
        }
        off = {**env, **COLD}
        cold(off, project)  # the first start caches the session/new answer and the bytecode
        older = _before(args.before, off, Path(tmp)) if args.before else None
        codex = codex_home(Path(tmp, "codex"), server.url + "/v1")
        if args.codex_acp:
            codex_first_chunk(args.codex_acp, codex, project)  # its first start writes its state
        times: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {"cold": [], "codex": [], "before": []}
        with warm_server(env) as warm:
            for _ in range(args.runs):  # interleaved, so the machine's drift hits all alike
                timed = {
                    "floor": bare_spawn,
                    "import": lambda: cold_import(off),
                    "cold": lambda: cold(off, project, cpu["cold"]),
                    "warm": lambda: cold(warm, project),
                }
                if older is not None:
                    timed["before"] = lambda: cold(older, project, cpu["before"], args.before)
                if args.codex_acp:
                    timed["codex"] = lambda: codex_first_chunk(
                        args.codex_acp, codex, project, cpu["codex"]
                    )
                for name, run in timed.items():
                    times.setdefault(name, []).append(run())
            loaded = statistics.median(loaded_prompts(warm, project, 20))
        echo = statistics.median(echo_round_trips(50))
    report({k: statistics.median(v) for k, v in times.items()}, args.runs)
    report_cpu(cpu)
    print(f"bare child echo round trip (floor)           median {echo * 1e6:7.1f} us")
    print(
        f"prompt -> first chunk, engine loaded         median {loaded * 1000:7.2f} ms  "
        f"{loaded / echo:.0f}x the echo (target < 15 ms)"
    )


def report(median: dict[str, float], runs: int) -> None:
    floor, native = median["floor"], median.get("codex")
    print(f"medians of {runs} runs, interleaved")
    print(f"python -c pass (spawn floor)                 {floor * 1000:7.1f} ms")
    rows = (
        ("cold import (spawn -> imported)", "import", ""),
        ("spawn -> first chunk, cold (no warm server)", "cold", " (target <= 1.2x codex-acp)"),
        ("spawn -> first chunk, cold, --before", "before", ""),
        ("spawn -> first chunk, warm server", "warm", ""),
    )
    for label, key, goal in rows:
        if key not in median:
            continue
        t = median[key]
        against = f", {t / native:.2f}x codex-acp{goal}" if native else ""
        print(f"{label:44} {t * 1000:7.1f} ms  {t / floor:5.1f}x python -c pass{against}")
    if native:
        print(f"{'spawn -> first chunk, codex-acp (native)':44} {native * 1000:7.1f} ms  "
              f"{native / floor:5.1f}x python -c pass")  # fmt: skip


def report_cpu(cpu: dict[str, list[float]]) -> None:
    """The CPU each process used by its first chunk (its own threads, not its children: the
    sandbox's and git's processes, or none): on a loaded machine the wall times follow it."""
    tether = statistics.median(cpu["cold"])
    line = f"{'CPU by the first chunk, cold (own threads)':44} {tether * 1000:7.1f} ms"
    if cpu["codex"]:
        native = statistics.median(cpu["codex"])
        line += f"  {tether / native:.2f}x codex-acp's ({native * 1000:.1f} ms)"
    if cpu["before"]:
        line += f"; --before {statistics.median(cpu['before']) * 1000:.1f} ms"
    print(line)


if __name__ == "__main__":
    main()
