"""A TEST DOUBLE of an ACP agent, for the editor clients' tests only: not tether.

It speaks NDJSON on stdio and acts out what tether cannot do yet (`session/load`, `session/list`
paging) and what the shared fixture session does not show (`terminal/*` with env, stderr, a
failing exit, `terminal/kill`, `outputByteLimit`). Each prompt's text
picks a scene; the agent's closing message reports what the client answered, so a client test
can check the exact values. Every frame the client sends is checked against the ACP schema by
the test that reads the client's protocol log.

Scenes (the prompt text): `run` (a command with output on both streams, exit 3), `kill` (a long
command killed), `limit` (output cut at outputByteLimit), `read` (fs reads with line/limit, and
of a missing file), `bad` (a line that is not JSON, an unknown method, a foreign session id),
`crash` (the agent dies mid-turn).
"""

from __future__ import annotations

import json
import sys
from typing import Any

SESSION = "double_session"
STORED = [
    {"sessionId": "stored_1", "title": "Fix the greeting", "updatedAt": "2026-01-02T10:00:00Z"},
    {"sessionId": "stored_2", "title": "Write notes", "updatedAt": "2026-01-01T09:00:00Z"},
]


def dump(value: Any) -> str:
    """JSON with sorted keys: the client tests compare the reports as text."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class Double:
    def __init__(self) -> None:
        self.next_id = 100
        self.cwd = "/"
        self.session = SESSION  # the session in use: new, or loaded

    # --- wire -------------------------------------------------------------------------------

    def send(self, frame: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **frame}) + "\n")
        sys.stdout.flush()

    def read(self) -> dict[str, Any] | None:
        line = sys.stdin.readline()
        if not line:
            return None
        return json.loads(line)

    def update(self, update: dict[str, Any], session: str | None = None) -> None:
        params = {"sessionId": session or self.session, "update": update}
        self.send({"method": "session/update", "params": params})

    def say(self, text: str) -> None:
        self.update(
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        )

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request to the client and wait for its answer (the whole response frame)."""
        rid = self.next_id
        self.next_id += 1
        self.send({"id": rid, "method": method, "params": {"sessionId": self.session, **params}})
        while True:
            frame = self.read()
            if frame is None:
                sys.exit(0)
            if frame.get("id") == rid and "method" not in frame:
                return frame

    # --- the agent's methods ----------------------------------------------------------------

    def serve(self) -> None:
        while (frame := self.read()) is not None:
            method, params = frame.get("method"), frame.get("params") or {}
            if "id" not in frame or method is None:
                continue  # notifications (session/cancel) and stray responses
            handler = getattr(self, "on_" + method.replace("/", "_"), None)
            if handler is None:
                self.send({"id": frame["id"], "error": {"code": -32601, "message": f"no {method}"}})
                continue
            self.send({"id": frame["id"], "result": handler(params)})

    def on_initialize(self, _params: dict[str, Any]) -> dict[str, Any]:
        return {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": True, "sessionCapabilities": {"list": {}}},
            "authMethods": [],
            "agentInfo": {"name": "acp-agent-double", "version": "0"},
        }

    def on_session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        self.cwd = params["cwd"]
        self.session = SESSION
        return {"sessionId": SESSION}

    def on_session_list(self, params: dict[str, Any]) -> dict[str, Any]:
        stored = [{**s, "cwd": self.cwd} for s in STORED]
        if params.get("cursor") == "page2":
            return {"sessions": stored[1:]}
        return {"sessions": stored[:1], "nextCursor": "page2"}

    def on_session_load(self, params: dict[str, Any]) -> dict[str, Any]:
        sid = self.session = params["sessionId"]
        self.update(
            {
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": "fix greet"},
            },
            sid,
        )
        # A command that ran in the terminal of an earlier window: this client never had it.
        self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "old_run",
                "title": "make check",
                "kind": "execute",
                "status": "completed",
                "content": [{"type": "terminal", "terminalId": "old_term"}],
                "rawOutput": {"exitCode": 2},
            },
            sid,
        )
        self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "old_edit",
                "title": "Replace app.py",
                "kind": "edit",
                "status": "completed",
                "content": [
                    {
                        "type": "diff",
                        "path": f"{self.cwd}/app.py",
                        "oldText": "a\n",
                        "newText": "b\n",
                    }
                ],
            },
            sid,
        )
        self.update(
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "Fixed it."},
            },
            sid,
        )
        return {}

    def on_session_prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        text = "".join(b.get("text", "") for b in params["prompt"] if b.get("type") == "text")
        scene = getattr(self, "scene_" + text.strip(), None)
        if scene is None:
            self.say(f"unknown scene {text!r}")
        else:
            scene()
        return {"stopReason": "end_turn"}

    # --- scenes -----------------------------------------------------------------------------

    def _terminal_call(self, call_id: str, title: str, terminal_id: str) -> None:
        self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": title,
                "kind": "execute",
                "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": terminal_id}],
            }
        )

    def _finish(self, call_id: str) -> None:
        self.update(
            {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed"}
        )

    def scene_run(self) -> None:
        script = 'printf "one\\ntwo $GREETING\\n"; echo oops >&2; exit 3'
        created = self.call(
            "terminal/create",
            {
                "command": "sh",
                "args": ["-c", script],
                "env": [{"name": "GREETING", "value": "hi"}],
                "cwd": self.cwd,
                "outputByteLimit": 10000,
            },
        )
        tid = created["result"]["terminalId"]
        self._terminal_call("run1", "Run the script", tid)
        exited = self.call("terminal/wait_for_exit", {"terminalId": tid})["result"]
        output = self.call("terminal/output", {"terminalId": tid})["result"]
        self.call("terminal/release", {"terminalId": tid})
        self._finish("run1")
        self.say(f"exit={dump(exited)} output={dump(output)}")

    def scene_kill(self) -> None:
        created = self.call("terminal/create", {"command": "sleep", "args": ["30"]})
        tid = created["result"]["terminalId"]
        self._terminal_call("kill1", "Sleep", tid)
        before = self.call("terminal/output", {"terminalId": tid})["result"]
        self.call("terminal/kill", {"terminalId": tid})
        exited = self.call("terminal/wait_for_exit", {"terminalId": tid})["result"]
        self.call("terminal/release", {"terminalId": tid})
        after = self.call("terminal/output", {"terminalId": tid})
        self._finish("kill1")
        self.say(
            f"before={dump(before)} exit={dump(exited)} "
            f"after_release_error={after.get('error', {}).get('code')}"
        )

    def scene_limit(self) -> None:
        created = self.call(
            "terminal/create",
            {"command": "printf", "args": ["0123456789é-end"], "outputByteLimit": 5},
        )
        tid = created["result"]["terminalId"]
        self.call("terminal/wait_for_exit", {"terminalId": tid})
        output = self.call("terminal/output", {"terminalId": tid})["result"]
        self.call("terminal/release", {"terminalId": tid})
        self.say(f"output={dump(output)}")

    def scene_bad(self) -> None:
        sys.stdout.write("this is not json\n")
        self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "multi",
                "title": "a title\non two lines",
                "status": "failed",
            }
        )
        sys.stdout.flush()
        unknown = self.call("_double/unknown", {})
        foreign = self.call(
            "fs/read_text_file", {"path": f"{self.cwd}/app.py", "sessionId": "other"}
        )
        self.say(f"unknown={unknown['error']['code']} foreign={foreign['error']['code']}")

    def scene_crash(self) -> None:
        self.say("about to fail")
        sys.stderr.write("double: first line\ndouble: simulated crash\n")
        sys.stderr.flush()
        sys.exit(7)

    def scene_read(self) -> None:
        part = self.call("fs/read_text_file", {"path": f"{self.cwd}/app.py", "line": 2, "limit": 1})
        missing = self.call("fs/read_text_file", {"path": f"{self.cwd}/missing.txt"})
        relative = self.call("fs/read_text_file", {"path": "app.py"})
        self.say(
            f"part={dump(part['result'])} missing={missing['error']['code']} "
            f"relative={relative['error']['code']}"
        )


if __name__ == "__main__":
    Double().serve()
