"""MCP servers from the config file (`[mcp_servers.NAME]`): each table checked with its key and
line, turned into the engine's ServerSpecs (variables expanded from tether's environment), and
started through the real `tether acp` for every session beside the client's, the client's
entry winning a shared name. The servers are the real SDK-built test servers (a stdio
subprocess, streamable HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from lsprotocol import types

from tests.mcp.test_mcp_servers import (
    ECHO,
    NOTICES,
    alive,
    config,
    new_session,
    notice,
    stdio_server,
    text,
    tool_names,
    until,
    wait_for,
)
from tests.support.harness import REPO, AgentProcess, Frame, script, spawn_agent
from tests.support.lsp_client import lsp_in_process, script_file
from tests.support.mcp_servers.http_server import serving
from tests.support.providers.mock_llm_server import MockLLMServer
from tests.support.stored import tool_results
from tether.engine.config.file import example_config, parse_config
from tether.engine.config.resolve import resolve
from tether.engine.mcp.spec import ServerSpec
from tether.errors import ConfigError

CFG = Path("/cfg/config.toml")


def specs_of(text: str, **env: str) -> tuple[ServerSpec, ...]:
    return resolve(parse_config(text, CFG), env=env).mcp_servers


def errors_of(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, CFG)
    return str(caught.value).splitlines()


# --- the tables -------------------------------------------------------------------------------

BOTH = """\
[mcp_servers.github]
command = "github-mcp"
args = ["--stdio", "--org=${ORG:-acme}"]
env = { GITHUB_TOKEN = "${GITHUB_TOKEN}", MODE = "fast" }
read_only = true

[mcp_servers.docs]
url = "https://docs.example/mcp"
headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
timeout = 45

[mcp_servers.off]
command = "never-started"
enabled = false
"""


def test_both_transports_become_server_specs_with_variables_expanded() -> None:
    github, docs = specs_of(BOTH, GITHUB_TOKEN="ghp_1", DOCS_TOKEN="d1")
    assert github == ServerSpec(
        name="github",
        transport="stdio",
        command="github-mcp",
        args=["--stdio", "--org=acme"],
        env={"GITHUB_TOKEN": "ghp_1", "MODE": "fast"},
        read_only=True,
    )
    assert docs == ServerSpec(
        name="docs",
        transport="http",
        url="https://docs.example/mcp",
        headers={"Authorization": "Bearer d1"},
        timeout=45.0,
    )
    assert (github.request_timeout, docs.request_timeout) == (120.0, 45.0)
    # A default applies when the variable is unset or empty; a set one wins.
    assert specs_of(BOTH, GITHUB_TOKEN="", DOCS_TOKEN="", ORG="")[0].args[1] == "--org=acme"
    assert specs_of(BOTH, GITHUB_TOKEN="", DOCS_TOKEN="", ORG="me")[0].args[1] == "--org=me"


def test_an_unset_variable_keeps_only_that_server_from_starting() -> None:
    github, docs = specs_of(BOTH, DOCS_TOKEN="d1")
    assert github.problem == (
        "/cfg/config.toml:4: mcp_servers.github.env.GITHUB_TOKEN: "
        "${GITHUB_TOKEN} is not set in tether's environment"
    )
    assert docs.problem == "" and docs.headers == {"Authorization": "Bearer d1"}


def test_no_table_no_servers() -> None:
    assert specs_of('[defaults]\nmodel = "demo"\n') == ()
    assert resolve(None, env={}).mcp_servers == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[mcp_servers.x]\ncommand = "a"\nurl = "http://h/mcp"\n',
            ":3: mcp_servers.x.url: set command (a stdio server) or url (streamable HTTP), "
            "not both",
        ),
        (
            '# servers\n[mcp_servers.x]\nargs = ["--stdio"]\n',
            ":2: mcp_servers.x: set command (a stdio server) or url (streamable HTTP)",
        ),
        (
            '[mcp_servers.x]\ncommand = "a"\ncmd = "b"\n',
            ":3: mcp_servers.x.cmd: unknown key (expected one of: command, args, env, url, "
            "headers, read_only, enabled, timeout)",
        ),
        (
            '[mcp_servers.x]\nurl = "https://h/mcp"\nargs = ["-v"]\n',
            ":3: mcp_servers.x.args: only a stdio server (command) takes args",
        ),
        (
            '[mcp_servers.x]\ncommand = "a"\n\nheaders = { A = "b" }\n',
            ":4: mcp_servers.x.headers: only an HTTP server (url) takes headers",
        ),
        (
            '[mcp_servers.x]\nurl = "localhost:8000/mcp"\n',
            ":2: mcp_servers.x.url: expected an http:// or https:// URL",
        ),
        (
            '[mcp_servers.x]\ncommand = "a"\nargs = "--stdio"\n',
            ":3: mcp_servers.x.args: expected an array, got a string",
        ),
        (
            '[mcp_servers.x]\ncommand = "a"\nread_only = "yes"\n',
            ":3: mcp_servers.x.read_only: expected true or false, got a string",
        ),
        ('[mcp_servers.x]\ncommand = ""\n', ":2: mcp_servers.x.command: must not be empty"),
        ('[mcp_servers.x]\ncommand = "a"\ntimeout = 0\n', ":3: mcp_servers.x.timeout: must be > 0"),
        (
            '[mcp_servers.x]\ncommand = "a"\ntimeout = "10s"\n',
            ":3: mcp_servers.x.timeout: expected a number, got a string",
        ),
        (
            '[mcp_servers.x]\ncommand = "a"\nenv = { T = "${GITHUB TOKEN}" }\n',
            ":3: mcp_servers.x.env.T: '${' starts no variable reference "
            "(expected ${NAME} or ${NAME:-default})",
        ),
        (
            '[mcp_servers."my server"]\ncommand = "a"\n',
            ":1: mcp_servers.\"my server\": a server name uses letters, digits, '_', '-' and "
            "'.' only",
        ),
        ("mcp_servers = 1\n", ":1: mcp_servers: expected a table"),
        ("[mcp_servers]\nx = 1\n", ":2: mcp_servers.x: expected a table"),
        # dotted keys and inline tables are found too
        (
            '\nmcp_servers.x.command = "a"\nmcp_servers.x.colour = 1\n',
            ":3: mcp_servers.x.colour: unknown key",
        ),
        ('[mcp_servers]\ny = { url = "ftp://h" }\n', ":2: mcp_servers.y.url: expected an http"),
    ],
)
def test_errors_name_the_key_and_line(text: str, expected: str) -> None:
    errors = errors_of(text)
    assert any(f"/cfg/config.toml{expected}" in e for e in errors), errors


def test_every_problem_of_a_file_is_reported_at_once() -> None:
    errors = errors_of(
        '[mcp_servers.a]\ncommand = "x"\nurl = "https://h"\n\n[mcp_servers.b]\ntimeout_s = 3\n'
    )
    assert [e.split(": ")[0] for e in errors] == [
        "/cfg/config.toml:3",
        "/cfg/config.toml:5",
        "/cfg/config.toml:6",
    ]


def test_the_example_configs_servers_are_valid() -> None:
    # Example lines are commented out as "#key = ..."; prose comments are "# ..." (as in
    # test_config.py).
    uncommented = re.sub(r"(?m)^#(?=[^\s#])", "", example_config())
    specs = specs_of(uncommented, GITHUB_TOKEN="ghp_1")
    assert {s.name: s.transport for s in specs} == {"github": "stdio", "docs": "http"}
    github = next(s for s in specs if s.name == "github")
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_1"} and not github.problem


def test_the_documented_servers_are_valid() -> None:
    doc = (REPO / "docs" / "configuration.md").read_text()
    block = doc.split("### The config file", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    specs = specs_of(block, GITHUB_TOKEN="ghp_1")
    assert {s.name: s.transport for s in specs} == {"github": "stdio", "docs": "http"}


# --- through tether acp -----------------------------------------------------------------------


def toml(value: Any) -> str:
    return json.dumps(value)  # a JSON string or array of strings is a TOML one


def stdio_table(name: str, *args: str, env: dict[str, str] | None = None, **more: Any) -> str:
    lines = [
        f"[mcp_servers.{name}]",
        f"command = {toml(sys.executable)}",
        f"args = {toml([str(ECHO), '--name', name, *args])}",
    ]
    if env:
        lines.append("env = { " + ", ".join(f"{k} = {toml(v)}" for k, v in env.items()) + " }")
    lines += [f"{k} = {toml(v)}" for k, v in more.items()]
    return "\n".join(lines) + "\n\n"


def write_config(tmp_path: Path, *tables: str, base: str = "") -> dict[str, str]:
    path = tmp_path / "mcp-config.toml"
    path.write_text(base + "".join(tables))
    return {"TETHER_CONFIG": str(path)}


def scripted(tmp_path: Path, *rounds: list[dict[str, Any]]) -> str:
    return str(script(tmp_path / "script.json", list(rounds)))


def tool_call(cid: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": tool, "arguments": arguments}}


def finished(agent: AgentProcess, sid: str) -> dict[str, Frame]:
    """The last `tool_call_update` with a final status, per call."""
    return {
        u["toolCallId"]: u
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")
    }


def shown_text(update: Frame) -> str:
    return "".join(c["content"]["text"] for c in update.get("content") or [])


@pytest.mark.slow
@pytest.mark.anyio
async def test_configured_servers_are_offered_and_called_through_a_full_turn(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """A stdio and a streamable-HTTP server from the file, none from the client: listed as
    `mcp__<server>__<tool>`, asked for (or not: read_only), called, their results shown."""
    with serving("docs") as url:
        env = write_config(
            tmp_path,
            stdio_table("files", env={"FILES_GREETING": "${MCP_TEST_GREETING}"}),
            f'[mcp_servers.docs]\nurl = "{url}"\n'
            'headers = { Authorization = "Bearer ${MCP_TEST_TOKEN}" }\nread_only = true\n',
        )
        env |= {"MCP_TEST_GREETING": "hola", "MCP_TEST_TOKEN": "t0ken"}
        rounds = scripted(
            tmp_path,
            [
                tool_call("c1", "mcp__files__echo", text="hello"),
                tool_call("c2", "mcp__docs__echo", text="over http"),
                tool_call("c3", "mcp__files__env", name="FILES_GREETING"),
                tool_call("c4", "mcp__docs__header", name="Authorization"),
            ],
            [{"text": "Done."}],
        )
        async with spawn_agent(home, "--script", rounds, env=env) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [])
            await wait_for(agent, sid, notice("MCP server files is ready"))
            await wait_for(agent, sid, notice("MCP server docs is ready"))
            done = await agent.prompt(sid, "use the configured servers")
            await agent.close_input()
            assert await agent.wait_exit(10) == 0
    assert done["result"] == {"stopReason": "end_turn"}
    ends = finished(agent, sid)
    ids = ("c1", "c2", "c3", "c4")
    assert {c: ends[c]["status"] for c in ids} == dict.fromkeys(ids, "completed")
    assert shown_text(ends["c1"]) == "helloAllowed: user (round)"  # (two blocks)
    assert shown_text(ends["c2"]) == "over http"
    # The env and headers tables, expanded from tether's environment:
    assert shown_text(ends["c3"]) == "holaAllowed: user (round)"
    assert shown_text(ends["c4"]) == "Bearer t0ken"
    # files' two calls ask, on the round's card (env's readOnlyHint is only the server's word);
    # docs, read_only in the user's file, does not.
    [asked] = [f for f in agent.frames if f.get("method") == "session/request_permission"]
    listing = asked["params"]["toolCall"]["content"][-1]["content"]["text"]
    assert listing.endswith("1. MCP files: echo\n2. MCP files: env (read-only, says the server)")
    starts = {u["toolCallId"]: u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call"}
    assert starts["c1"]["title"] == "MCP files: echo"
    assert starts["c2"]["kind"] == "read"  # read_only = true in the file


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_clients_entry_wins_a_shared_name(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """The editor's per-project `echo` replaces the file's `echo` (never started); the file's
    other server still starts beside it."""
    config_pid = tmp_path / "config-echo.pid"
    env = write_config(
        tmp_path,
        stdio_table("echo", "--pid-file", str(config_pid), env={"ORIGIN": "config file"}),
        stdio_table("extra"),
    )
    rounds = scripted(
        tmp_path,
        [
            tool_call("c1", "mcp__echo__env", name="ORIGIN"),
            tool_call("c2", "mcp__extra__peek", text="x"),
        ],
        [{"text": "Done."}],
    )
    async with spawn_agent(home, "--script", rounds, env=env) as agent:
        await agent.initialize(**NOTICES)
        sid = await new_session(agent, project, [stdio_server("echo", env={"ORIGIN": "client"})])
        await wait_for(agent, sid, notice("MCP server echo is ready"))
        await wait_for(agent, sid, notice("MCP server extra is ready"))
        done = await agent.prompt(sid, "which echo?")
    assert done["result"] == {"stopReason": "end_turn"}
    ends = finished(agent, sid)
    assert shown_text(ends["c1"]) == "clientAllowed: user (round)"
    assert shown_text(ends["c2"]) == "peeked at 'x'Allowed: user (round)"
    assert not config_pid.exists()
    ready = [u for u in agent.updates(sid) if notice("MCP server echo is ready")(u)]
    assert len(ready) == 1


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_configured_server_that_cannot_start_is_told_and_the_session_works(
    home: Path, project: Path, tmp_path: Path
) -> None:
    env = write_config(
        tmp_path,
        "[mcp_servers.broken]\n"
        f"command = {toml(sys.executable)}\n"
        'args = ["-c", "import sys; sys.stderr.write(\'no token file\\\\n\'); sys.exit(2)"]\n\n',
        '[mcp_servers.missing]\ncommand = "/nonexistent/mcp-server"\n\n',
        '[mcp_servers.github]\nurl = "https://127.0.0.1:9/mcp"\n'
        'headers = { Authorization = "Bearer ${MCP_TEST_UNSET_TOKEN}" }\n\n',
    )
    rounds = scripted(tmp_path, [{"text": "Still here."}])
    async with spawn_agent(home, "--script", rounds, env=env) as agent:
        await agent.initialize(**NOTICES)
        sid = await new_session(agent, project, [])
        broken = await wait_for(agent, sid, notice("MCP server broken could not start"))
        missing = await wait_for(agent, sid, notice("MCP server missing could not start"))
        github = await wait_for(agent, sid, notice("MCP server github could not start"))
        done = await agent.prompt(sid, "hello")
    assert done["result"] == {"stopReason": "end_turn"}
    assert broken["severity"] == "error" and "no token file" in broken["description"]
    assert "/nonexistent/mcp-server" in missing["description"]
    assert github["description"] == (
        f"{tmp_path / 'mcp-config.toml'}:10: mcp_servers.github.headers.Authorization: "
        "${MCP_TEST_UNSET_TOKEN} is not set in tether's environment"
    )
    said = "".join(
        u["content"]["text"]
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert said == "Still here."


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_slow_configured_server_does_not_hold_up_the_session(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """Mirrors the client's case (test_mcp_servers.py): session/new answers and a first
    prompt runs while the server cannot start; once it is ready, the next request offers it."""
    gate = tmp_path / "gate"
    with MockLLMServer() as llm:
        llm.script("/v1/chat/completions", text("Before."), text("After."))
        provider = Path(config(tmp_path, llm.url)["TETHER_CONFIG"]).read_text()
        env = write_config(tmp_path, stdio_table("slow", "--gate", str(gate)), base=provider)
        async with spawn_agent(home, env=env) as agent:
            await agent.initialize(**NOTICES)
            sid = await new_session(agent, project, [])
            assert (await agent.prompt(sid, "hi"))["result"] == {"stopReason": "end_turn"}
            assert not gate.exists()  # so the server could not have been ready
            gate.touch()
            await wait_for(agent, sid, notice("MCP server slow is ready"))
            assert (await agent.prompt(sid, "again"))["result"] == {"stopReason": "end_turn"}
        before, after = (tool_names(r.json()) for r in llm.posts)
    assert not any(n.startswith("mcp__") for n in before)
    assert "mcp__slow__echo" in after
    assert (
        "## slow\nUse the slow tools to repeat text back."
        in llm.posts[1].json()["messages"][0]["content"]
    )


@pytest.mark.slow
@pytest.mark.anyio
async def test_load_and_resume_start_the_configured_servers_too(
    home: Path, project: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "cfg.pid"
    env = write_config(tmp_path, stdio_table("cfg", "--pid-file", str(pid_file)))
    ready = notice("MCP server cfg is ready")

    async def reopened(agent: AgentProcess, sid: str, count: int) -> int:
        with anyio.fail_after(20):
            while len([u for u in agent.updates(sid) if ready(u)]) < count:
                await agent.recv()
        return int(pid_file.read_text())

    async with spawn_agent(home, env=env) as agent:
        await agent.initialize(**NOTICES)
        sid = await new_session(agent, project, [])
        first = await reopened(agent, sid, 1)
        await agent.request("session/close", {"sessionId": sid})
        assert not alive(first)
        assert "result" in await agent.request(
            "session/resume", {"sessionId": sid, "cwd": str(project)}
        )
        second = await reopened(agent, sid, 2)
        await agent.request("session/close", {"sessionId": sid})
        assert not alive(second)
        params = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
        assert "result" in await agent.request("session/load", params)
        third = await reopened(agent, sid, 3)
        assert len({first, second, third}) == 3 and alive(third)
        await agent.close_input()
        assert await agent.wait_exit(15) == 0
    assert not alive(third)


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_fast_first_session_still_starts_the_configured_servers(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """The first plain `session/new` answered before the engine loads (its answer cached by
    the start before) gets the file's servers once the engine is up."""
    env = write_config(tmp_path, stdio_table("cfg"))
    rounds = scripted(tmp_path, [tool_call("c1", "mcp__cfg__peek", text="fast")], [{"text": "ok"}])
    cache = home / "cache" / "new-session.json"
    async with spawn_agent(home, "--script", rounds, env=env) as agent:
        await agent.initialize(**NOTICES)
        await new_session(agent, project, [])
        await until(cache.exists)
        await agent.close_input()
        assert await agent.wait_exit(15) == 0
    async with spawn_agent(home, "--script", rounds, env=env) as agent:
        await agent.initialize(**NOTICES)
        sid = await new_session(agent, project, [])
        await wait_for(agent, sid, notice("MCP server cfg is ready"))
        done = await agent.prompt(sid, "go")
        await agent.close_input()
        assert await agent.wait_exit(15) == 0
    log = (home / "logs" / "tether.log").read_text()
    assert log.count("before the engine loaded") == 1  # the second start took the fast path
    assert done["result"] == {"stopReason": "end_turn"}
    assert shown_text(finished(agent, sid)["c1"]) == "peeked at 'fast'Allowed: user (once)"


@pytest.mark.slow
@pytest.mark.anyio
async def test_tether_lsp_starts_the_configured_servers_with_its_session(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LSP clients give no servers: the file's start with the connection's session (at its
    first prompt), are logged when ready, and a failure is shown."""
    monkeypatch.setenv("TETHER_HOME", str(home))
    env = write_config(
        tmp_path, stdio_table("cfg"), '[mcp_servers.gone]\ncommand = "/nonexistent/mcp"\n'
    )
    monkeypatch.setenv("TETHER_CONFIG", env["TETHER_CONFIG"])
    rounds = script_file(
        tmp_path / "lsp.json",
        [
            [{"text": "Hello."}],
            [tool_call("c1", "mcp__cfg__peek", text="from lsp")],
            [{"text": "Peeked."}],
        ],
    )
    async with lsp_in_process(project, rounds) as (editor, _):
        await editor.start()
        assert (await editor.prompt("hi"))["text"] == "Hello."
        await editor.wait_for(
            lambda: any("MCP server cfg is ready" in m.message for m in editor.logs)
        )
        await editor.wait_for(
            lambda: any("MCP server gone could not start" in m.message for m in editor.messages)
        )
        result = await editor.prompt("peek")
    assert result["text"] == "Peeked."
    assert tool_results(home, result["sessionId"]) == [
        "[approval] user (once)\npeeked at 'from lsp'"
    ]
    gone = next(m for m in editor.messages if "gone" in m.message)
    assert gone.type == types.MessageType.Error and "/nonexistent/mcp" in gone.message
