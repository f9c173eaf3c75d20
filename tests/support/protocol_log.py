"""Schema checks for the editor clients' frames.

`check_log` reads tether.nvim's protocol log (`-> ` frames the client sent, `<- ` frames the agent
sent, `?? ` lines from the agent that are not JSON, `!! ` agent stderr) and validates every frame against the ACP v1 schema, each side's
results against the method of the request they answer. `check_sent` does the same for the
frames a harness-driven replay sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.acp_schema import validate_agent_frame, validate_client_frame

Frame = dict[str, Any]


def check_frames(frames: list[tuple[str, Frame]]) -> None:
    """`frames`: ("client" | "agent", frame) in wire order."""
    asked: dict[tuple[str, Any], str] = {}  # (asking side, id) -> method
    for side, frame in frames:
        other = "agent" if side == "client" else "client"
        method = frame.get("method")
        if method is not None and "id" in frame:
            asked[(side, frame["id"])] = method
        answered = None if method is not None else asked.get((other, frame.get("id")))
        if side == "client":
            validate_client_frame(frame, method=answered)
        else:
            validate_agent_frame(frame, method=answered)


def read_log(path: Path) -> list[tuple[str, Frame]]:
    frames: list[tuple[str, Frame]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        prefix, body = line[:3], line[3:]
        if prefix == "-> ":
            frames.append(("client", json.loads(body)))
        elif prefix == "<- ":
            frames.append(("agent", json.loads(body)))
        elif prefix not in ("!! ", "?? "):
            raise AssertionError(f"unexpected protocol log line: {line!r}")
    return frames


def check_log(path: Path) -> list[tuple[str, Frame]]:
    frames = read_log(path)
    check_frames(frames)
    return frames


def check_sent(sent: list[Frame], received: list[Frame]) -> None:
    """Validate what a replay sent, given what the agent sent (for the methods answered)."""
    agent_asked = {f["id"]: f["method"] for f in received if "method" in f and "id" in f}
    for frame in sent:
        answered = None if "method" in frame else agent_asked.get(frame.get("id"))
        validate_client_frame(frame, method=answered)
