"""A native peer for bench/first_chunk.py: Zed's `codex-acp` (Rust; npm
`@zed-industries/codex-acp`, its platform package holds the binary), timed the same way as
tether: spawned, its requests written back to back (`initialize`, then `authenticate` with the
API key from the environment, which it requires, and `session/new`), the prompt right after
`session/new`'s answer, to its first `agent_message_chunk` of the model's text, against the
same loopback model (OpenAI Responses wire). Its config lives in a private CODEX_HOME, kept across runs as tether's
cache is."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import IO, Any

MODEL_TEXT = "Hello"  # the loopback model's first words (bench/first_chunk.py)


def model_text_chunk(line: bytes) -> bool:
    """An `agent_message_chunk` carrying the model's first words: not a notice an agent sends
    before the model answers (codex-acp may warn at once, as a message chunk)."""
    if b'"agent_message_chunk"' not in line:
        return False
    update = json.loads(line).get("params", {}).get("update", {})
    return update.get("content", {}).get("text") == MODEL_TEXT


def codex_home(base: Path, model_url: str) -> Path:
    """A CODEX_HOME whose config sends every request to the loopback model."""
    base.mkdir(exist_ok=True)
    (base / "config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "bench"\n[model_providers.bench]\n'
        f'name = "bench"\nbase_url = "{model_url}"\nenv_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
    )
    return base


def own_cpu(pid: int) -> float:
    """The CPU time process `pid` has used so far, in seconds: all its threads (those that
    ended too), not its children (Linux, /proc; clock-tick resolution)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def codex_first_chunk(
    binary: str, home: Path, project: Path, cpu: list[float] | None = None
) -> float:
    """Spawn -> first chunk, in seconds; `cpu` gets the CPU it used by then (`own_cpu`)."""
    env = {**os.environ, "CODEX_HOME": str(home), "OPENAI_API_KEY": "sk-bench"}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {"protocolVersion": 1, "clientCapabilities": {}}
    new = {"cwd": str(project), "mcpServers": []}
    _send(proc.stdin, 0, "initialize", init)
    _send(proc.stdin, 1, "authenticate", {"methodId": "openai-api-key"})
    _send(proc.stdin, 2, "session/new", new)
    sid = _until(proc.stdout, 2)["result"]["sessionId"]
    _send(
        proc.stdin,
        3,
        "session/prompt",
        {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]},
    )
    took = _first_chunk(proc.stdout) - started
    if cpu is not None:
        cpu.append(own_cpu(proc.pid))
    _until(proc.stdout, 3)
    proc.stdin.close()
    proc.terminate()  # it does not exit when its input ends
    proc.wait(timeout=30)
    proc.stdout.close()
    return took


def _send(stdin: IO[bytes], rid: int, method: str, params: dict[str, Any]) -> None:
    stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
        + b"\n"
    )
    stdin.flush()


def _until(stdout: IO[bytes], rid: int) -> dict[str, Any]:
    for line in stdout:
        frame = json.loads(line)
        if frame.get("id") == rid and "method" not in frame:
            if "error" in frame:
                raise RuntimeError(f"codex-acp: {frame['error']}")
            return frame
    raise RuntimeError(f"codex-acp gave no answer to {rid}")


def _first_chunk(stdout: IO[bytes]) -> float:
    for line in stdout:
        if model_text_chunk(line):
            return time.perf_counter()
    raise RuntimeError("codex-acp streamed none of the model's text")
