"""The client side of ACP's `terminal/*`, for real: `terminal/create` starts the process, output
is collected (truncated from the beginning at `outputByteLimit`, as the spec says), and
`kill` / `release` stop it. Every request the agent sends is validated against the schema.

How `command` and `args` are started is the client's (`runs`):
- `exec` (the default): the program itself, looked up by name in the PATH of the environment
  it is given: what acpx does (Node's `child_process.spawn` with `env`), and Python's
  subprocess, Rust's `Command`, libuv;
- `toad`: Toad's `TerminalTool` (batrachianai/toad, src/toad/widgets/terminal_tool.py): the line
  `command` (when it holds a space) or `command` and the shell-quoted `args`, run by the user's
  `$SHELL -c`, itself started through `/bin/sh -c`, with Toad's environment and the agent's
  `env` on top;
- `own-path`: a client that looks the program up in its own PATH and drops the agent's `PATH`
  (Go's exec.Command, Java's ProcessBuilder, glibc's posix_spawnp; a Toad fork that blocks
  `PATH` from the agent's `env`);
- `toad-bare`: Toad's way, ignoring the agent's `env` altogether.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

from tests.support.acp_schema import validate_agent_frame
from tether.rpc.peer import Peer


@dataclass
class _Term:
    proc: anyio.abc.Process
    limit: int | None
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    exited: anyio.Event = field(default_factory=anyio.Event)
    released: bool = False


class TerminalServer:
    def __init__(self, runs: str = "exec") -> None:
        self.runs = runs
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.terms: dict[str, _Term] = {}
        self.started = anyio.Event()  # set when a terminal's process has started
        self._tg: anyio.abc.TaskGroup | None = None
        self._next = 0
        self.refuse: str | None = None  # an editor that cannot create terminals says this

    def register(self, peer: Peer, tg: anyio.abc.TaskGroup) -> None:
        self._tg = tg
        for method in ("create", "output", "wait_for_exit", "kill", "release"):
            peer.on_request(f"terminal/{method}", self._handler(f"terminal/{method}"))

    def methods(self) -> list[str]:
        return [m for m, _ in self.calls]

    def _handler(self, method: str) -> Any:
        async def handle(params: dict[str, Any]) -> dict[str, Any]:
            validate_agent_frame({"jsonrpc": "2.0", "id": 0, "method": method, "params": params})
            self.calls.append((method, params))
            return await getattr(self, "_" + method.split("/")[1])(params)

        return handle

    def _term(self, params: dict[str, Any]) -> _Term:
        term = self.terms.get(params["terminalId"])
        if term is None or term.released:
            from tether.rpc.rpc_error import RpcError

            raise RpcError(-32002, f"no terminal {params['terminalId']}")
        return term

    async def _create(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.refuse is not None:
            from tether.rpc.rpc_error import RpcError

            raise RpcError(-32603, self.refuse)
        env = {**os.environ, **{e["name"]: e["value"] for e in params.get("env") or []}}
        argv = self._argv(params["command"], params.get("args", []), env)
        proc = await anyio.open_process(
            argv,
            cwd=params.get("cwd"),
            env=env,
            stdin=None,
            stderr=-2,  # subprocess.STDOUT: one stream, as a terminal shows it
            start_new_session=True,
        )
        self._next += 1
        tid = f"term-{self._next}"
        term = self.terms[tid] = _Term(proc, params.get("outputByteLimit"))
        assert self._tg is not None
        self._tg.start_soon(self._collect, term)
        self.started.set()
        return {"terminalId": tid}

    def _argv(self, command: str, args: list[str], env: dict[str, str]) -> list[str]:
        if self.runs == "toad-bare":
            env.clear()
            env.update(os.environ)
        if self.runs in ("toad", "toad-bare"):
            line = command if " " in command else f"{command} {shlex.join(args)}"
            shell = os.environ.get("SHELL", "sh")
            return ["/bin/sh", "-c", shlex.join([shell, "-c", line])]
        if self.runs == "own-path":
            own = env["PATH"] = os.environ.get("PATH", os.defpath)
            return [
                command if "/" in command else shutil.which(command, path=own) or command,
                *args,
            ]
        return [command, *args]

    async def _collect(self, term: _Term) -> None:
        assert term.proc.stdout is not None
        async for chunk in term.proc.stdout:
            term.output += chunk
            if term.limit is not None and len(term.output) > term.limit:
                del term.output[: len(term.output) - term.limit]
                while term.output and (term.output[0] & 0xC0) == 0x80:  # a char boundary
                    del term.output[0]
                term.truncated = True
        await term.proc.wait()
        term.exited.set()

    def _status(self, term: _Term) -> dict[str, Any]:
        code = term.proc.returncode
        if code is not None and code < 0:
            return {"exitCode": None, "signal": signal.Signals(-code).name}
        return {"exitCode": code, "signal": None}

    async def _output(self, params: dict[str, Any]) -> dict[str, Any]:
        term = self._term(params)
        result: dict[str, Any] = {
            "output": term.output.decode("utf-8", "replace"),
            "truncated": term.truncated,
        }
        if term.exited.is_set():
            result["exitStatus"] = self._status(term)
        return result

    async def _wait_for_exit(self, params: dict[str, Any]) -> dict[str, Any]:
        term = self._term(params)
        await term.exited.wait()
        return self._status(term)

    async def _kill(self, params: dict[str, Any]) -> dict[str, Any]:
        _kill(self._term(params))
        return {}

    async def _release(self, params: dict[str, Any]) -> dict[str, Any]:
        term = self._term(params)
        _kill(term)
        term.released = True
        return {}

    async def aclose(self) -> None:
        for term in self.terms.values():
            _kill(term)
            with anyio.move_on_after(5):
                await term.proc.wait()
            await term.proc.aclose()


def _kill(term: _Term) -> None:
    try:
        os.killpg(term.proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it has ended already
