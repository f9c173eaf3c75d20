"""Fuzzing `tether acp` over real pipes: hypothesis strategies for hostile input (well-framed
JSON-RPC for every ACP method with wild params, malformed JSON, deep nesting, raw junk), and a
synchronous driver that keeps one agent process for many batches and checks after each batch
that it still answers. Used by tests/rpc/test_fuzz_frames.py (bounded) and bench/fuzz.py (long)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from queue import Empty, Queue
from typing import Any

from hypothesis import strategies as st

from tests.support.acp_schema import validate_agent_frame

REPO = Path(__file__).resolve().parents[2]
METHODS = [
    "initialize",
    "session/new",
    "session/prompt",
    "session/cancel",
    "session/list",
    "session/close",
    "session/set_mode",
    "session/set_config_option",
    "$/cancel_request",
    "authenticate",
    "_vendor/x",
    "nope",
]
KEYS = [
    "sessionId",
    "cwd",
    "mcpServers",
    "prompt",
    "modeId",
    "configId",
    "value",
    "cursor",
    "protocolVersion",
    "requestId",
    "type",
    "text",
    "name",
    "command",
    "args",
    "env",
    "_meta",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["/", "/tmp", "ask", "code", "sess_x", "text", "model", "approvals"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), inner, max_size=5),
    ),
    max_leaves=12,
)
ids = st.one_of(st.integers(0, 10**6), st.text(max_size=6), st.none(), st.floats(), st.booleans())


@st.composite
def messages(draw: st.DrawFn) -> bytes:
    """One JSON-RPC-ish payload (no framing)."""
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return draw(st.binary(max_size=40)).replace(b"\n", b" ")
    if shape == 1:
        depth = draw(st.integers(100, 3000))
        return (
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
            + b"[" * depth
            + b"]" * depth
            + b"}"
        )
    msg: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]))}
    if draw(st.booleans()):
        msg["id"] = draw(ids)
    if shape != 2:
        msg["method"] = draw(st.sampled_from(METHODS))
    if draw(st.integers(0, 4)):
        msg["params"] = draw(json_values)
    if shape == 2:
        msg[draw(st.sampled_from(["result", "error"]))] = draw(json_values)
    return json.dumps(msg).encode()


def frame(payload: bytes, framing: str) -> bytes:
    if framing == "content-length":
        return b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
    return payload + b"\n"


junk = st.binary(max_size=30).filter(lambda b: b"ength" not in b.lower())


@st.composite
def batches(draw: st.DrawFn, framing: str) -> bytes:
    parts = [frame(draw(messages()), framing) for _ in range(draw(st.integers(1, 12)))]
    if draw(st.booleans()):  # raw junk between frames (a line of its own in NDJSON)
        at = draw(st.integers(0, len(parts)))
        parts.insert(at, draw(junk) + (b"\n" if framing == "ndjson" else b""))
    return b"".join(parts)


class Driver:
    """One `tether acp` process fed batch after batch; every frame it writes is validated."""

    def __init__(self, home: Path, framing: str) -> None:
        self.framing = framing
        env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tether", "acp", "--framing", framing],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.frames: Queue[dict[str, Any] | None] = Queue()
        self.count = 0
        self.error: Exception | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                body = self._next_body(out)
                if body is None:
                    break
                message = json.loads(body)
                validate_agent_frame(message)
                self.frames.put(message)
        except Exception as exc:  # reported by the next probe
            self.error = exc
        self.frames.put(None)

    def _next_body(self, out: Any) -> bytes | None:
        if self.framing == "ndjson":
            line = out.readline()
            return line or None
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            byte = out.read(1)
            if not byte:
                return None
            header += byte
        return out.read(int(header.split(b":")[1]))

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def still_serving(self, timeout: float = 20) -> bool:
        """Send an `initialize` and wait for its answer (skipping everything else)."""
        self.count += 1
        probe = f"probe-{self.count}"
        request = {
            "jsonrpc": "2.0",
            "id": probe,
            "method": "initialize",
            "params": {"protocolVersion": 1},
        }
        self.send(frame(json.dumps(request).encode(), self.framing))
        while True:
            try:
                message = self.frames.get(timeout=timeout)
            except Empty:
                return False
            if message is None:
                return False
            if message.get("id") == probe:
                return "result" in message

    def close(self) -> int:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=20)
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()
