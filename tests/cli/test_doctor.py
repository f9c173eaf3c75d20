"""`tether doctor` as a real subprocess: the listing, the masked keys, and a probe against the
loopback server speaking each API's wire format."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.harness import REPO
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Reply, error_reply

pytestmark = pytest.mark.slow

LOCAL_KEY = "sk-local-0123456789wxyz"


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as srv:
        yield srv


def write_config(tmp_path: Path, server: MockLLMServer) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f"""\
[providers.local]
kind = "openai"
base_url = "{server.url}/v1"
api_key = "{LOCAL_KEY}"
builtin_models = false

[providers.claude]
kind = "anthropic"
base_url = "{server.url}"
api_key_env = "CLAUDE_TEST_KEY"
builtin_models = false

[models."local:test-model"]
context_window = 32000
images = true
reasoning = ["low", "high"]
input_price = 1.5
output_price = 6

[models."claude:claude-test"]

[defaults]
model = "local:test-model"
"""
    )
    return path


def doctor(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run(
        [sys.executable, "-m", "tether", "doctor", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=REPO,
        timeout=60,
    )


def line_matching(pattern: str, text: str) -> str:
    found = [line for line in text.splitlines() if re.search(pattern, line)]
    assert found, f"no line matches {pattern!r} in:\n{text}"
    return found[0]


def test_lists_providers_and_models_without_printing_keys(
    tmp_path: Path, server: MockLLMServer
) -> None:
    path = write_config(tmp_path, server)
    env = {
        "TETHER_CONFIG": str(path),
        "CLAUDE_TEST_KEY": "sk-ant-secret-0000",
        "OPENAI_API_KEY": "sk-env-1111",
    }
    done = doctor(env=env)
    out = done.stdout
    assert done.returncode == 0, done.stderr
    assert f"config file  {path}  (ok)" in out
    local = line_matching(r"^\s+local\s", out)
    assert re.search(
        rf"local\s+openai\s+{re.escape(server.url)}/v1\s+key config \(sk-…wxyz\)", local
    )
    claude = line_matching(r"^\s+claude\s", out)
    assert "key env CLAUDE_TEST_KEY (set)" in claude and "from config" in claude
    env_openai = line_matching(r"^\s+openai\s", out)
    assert (
        "https://api.openai.com/v1" in env_openai and "key env OPENAI_API_KEY (set)" in env_openai
    )
    for secret in (LOCAL_KEY, "sk-ant-secret", "sk-env-1111"):
        assert secret not in out and secret not in done.stderr

    default = line_matching(r"local:test-model", out)
    assert default.lstrip().startswith("*")
    assert re.search(
        r"context 32,000\s+output 8,192\s+images yes\s+reasoning low/high \(default low\)", default
    )
    assert "price in 1.5 / out 6 USD per 1M tokens" in default
    assert "openai:gpt-5.4 " in out and "demo " in out
    assert server.requests == []  # no --probe, no traffic


def test_probe_reports_latency_and_the_providers_exact_error(
    tmp_path: Path, server: MockLLMServer
) -> None:
    path = write_config(tmp_path, server)
    server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["ready"])))
    server.script("/v1/messages", error_reply(401, "invalid x-api-key"))
    done = doctor("--probe", env={"TETHER_CONFIG": str(path), "CLAUDE_TEST_KEY": "bad"})
    out = done.stdout
    assert done.returncode == 1  # a provider failed
    ok = line_matching(r"^\s+local\s+local:test-model\s+ok\s", out)
    assert re.search(r"ok\s+\d+ ms \(first token \d+ ms\), reply 'ready'$", ok)
    failed = line_matching(r"^\s+claude\s+claude:claude-test\s+error\s", out)
    assert failed.endswith("error  claude HTTP 401: invalid x-api-key")

    chat = next(r for r in server.requests if r.path == "/v1/chat/completions")
    body = chat.json()
    assert body["model"] == "test-model" and body["max_tokens"] == 16 and body["stream"]
    assert chat.headers["authorization"] == f"Bearer {LOCAL_KEY}"
    messages = next(r for r in server.requests if r.path == "/v1/messages")
    assert messages.headers["x-api-key"] == "bad"
    assert len(server.posts) == 2  # one attempt each: a 401 is reported, not retried


def test_probe_reports_a_connection_failure(tmp_path: Path) -> None:
    with MockLLMServer() as dead:
        url = dead.url  # a port nothing listens on once the server stops
    path = tmp_path / "config.toml"
    path.write_text(f'[providers.gone]\nkind = "openai"\nbase_url = "{url}/v1"\n')
    done = doctor("--probe", env={"TETHER_CONFIG": str(path)})
    line = line_matching(r"^\s+gone\s+gone:gpt-5\.5\s+error\s", done.stdout)
    assert "refused the connection" in line and "[providers.gone] base_url" in line
    assert done.returncode == 1


def test_a_broken_config_names_key_and_line_and_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[providers.x]\nkind = "openai"\n\ncolour = "blue"\n')
    done = doctor(env={"TETHER_CONFIG": str(path), "OPENAI_API_KEY": "sk-env"})
    assert done.returncode == 1
    assert f"  error: {path}:4: providers.x.colour: unknown key" in done.stdout
    assert "1 error: each is ignored alone, the rest applies" in done.stdout
    # what tether acp serves: the file's provider (the bad key left out) and the environment's
    assert line_matching(r"^\s+x\s", done.stdout)
    assert line_matching(r"^\s+openai\s", done.stdout)


def test_no_file_and_no_keys(tmp_path: Path) -> None:
    path = tmp_path / "xdg" / "tether" / "config.toml"  # the default place, with nothing there
    done = doctor(env={"TETHER_CONFIG": "", "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert done.returncode == 0
    assert f"config file  {path}  (none; `tether config init` writes an example)" in done.stdout
    assert "none: set one of OPENAI_API_KEY, ANTHROPIC_API_KEY, DEEPSEEK_API_KEY" in done.stdout
    assert line_matching(r"^\s+\*\s+demo\s", done.stdout)
    assert "default: demo (the offline demo: nothing is configured)\n" in done.stdout


def test_a_base_url_alone_is_a_keyless_provider_and_the_default(
    tmp_path: Path, server: MockLLMServer
) -> None:
    server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["ready"])))
    env = {"TETHER_CONFIG": os.devnull, "OPENAI_BASE_URL": server.url + "/v1"}
    done = doctor("--probe", env=env)
    assert done.returncode == 0, done.stdout
    provider = line_matching(r"^\s+openai\s", done.stdout)
    assert "key none (OPENAI_API_KEY is not set: requests carry no credentials" in provider
    assert "\nwarnings\n" not in done.stdout  # keyless is what was asked for
    assert line_matching(r"^\s+\*\s+openai:gpt-5.5\s", done.stdout)
    assert (
        "default: openai:gpt-5.5 (the first model of the only configured provider; "
        "TETHER_MODEL or [defaults] model chooses another)"
    ) in done.stdout
    assert "TETHER_MODEL=openai:NAME picks one" in done.stdout  # local servers name models
    line_matching(r"^\s+openai\s+openai:gpt-5.5\s+ok\s", done.stdout)
    assert len(server.posts) == 1  # the probe
    assert all("authorization" not in r.headers for r in server.requests)  # GET /models too


def test_json_report(tmp_path: Path, server: MockLLMServer) -> None:
    path = write_config(tmp_path, server)
    done = doctor("--json", "--model", "local:other", env={"TETHER_CONFIG": str(path)})
    report = json.loads(done.stdout)
    project = str(REPO / ".tether" / "config.toml")
    assert report["config"] == {
        "path": str(path),
        "found": True,
        "errors": [],
        "project": project,
        "fatal": [],
    }
    assert report["default"] == "local:other"  # --model may name an unlisted model
    names = {p["name"]: p for p in report["providers"]}
    assert names["local"]["key"] == "config (sk-…wxyz)"
    assert names["claude"]["key"] == "env CLAUDE_TEST_KEY (not set)"
    assert any("CLAUDE_TEST_KEY is not set" in w for w in report["warnings"])
    models = {m["id"]: m for m in report["models"]}
    assert models["local:test-model"]["reasoning_levels"] == ["low", "high"]
    assert models["local:other"]["default"] is True
    assert LOCAL_KEY not in done.stdout


def test_the_agent_table_is_shown_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    env = {"TETHER_CONFIG": str(path), "TETHER_HOME": str(tmp_path / "home")}
    path.write_text('[agent]\nparallel_tools = false\nalways_scope = "project"\n')
    done = doctor(env=env)
    assert "agent ([agent]: how turns run; unset keys show their defaults)" in done.stdout
    assert line_matching(r"^\s+parallel_tools\s+false$", done.stdout)
    assert line_matching(r"^\s+always_scope\s+\"project\"$", done.stdout)
    assert line_matching(r"^\s+max_tool_result_chars\s+32768$", done.stdout)
    path.write_text('[agent]\nmax_rounds = 5\ndefault_mode = "yolo"\n')
    done = doctor(env=env)
    assert done.returncode == 1
    assert f"  error: {path}:3: agent.default_mode: invalid value 'yolo'" in done.stdout


def test_doctor_says_which_search_engine_runs(tmp_path: Path) -> None:
    path = {"TETHER_CONFIG": str(tmp_path / "none.toml")}
    done = doctor(env=path)
    assert line_matching(r"^  engine: ripgrep 14\.\S+ \(/\S+/rg\)$", done.stdout)
    off = doctor("--json", env={**path, "TETHER_RG": "0"})
    engine = json.loads(off.stdout)["search"]["engine"]
    assert engine == "python (single pass; ripgrep not found or TETHER_RG=0)"


def test_command_env_is_checked_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    env = {"TETHER_CONFIG": str(path), "TETHER_HOME": str(tmp_path / "home")}
    path.write_text('[workspace]\ncommand_env = ["JAVA_TOOL_OPTIONS", "MYCO_*"]\n')
    assert doctor(env=env).returncode == 0
    path.write_text('[workspace]\n\ncommand_env = ["JAVA_TOOL_OPTIONS", "=oops"]\n')
    done = doctor(env=env)
    assert done.returncode == 1
    assert f"  error: {path}:3: workspace.command_env: '=oops' is not a variable name" in (
        done.stdout
    )


def test_the_todo_reminder_channel_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    env = {"TETHER_CONFIG": str(path), "TETHER_HOME": str(tmp_path / "home")}
    path.write_text('[agent]\ntodo_nag_strategy = "synthetic_tool"\n')
    done = doctor(env=env)
    assert line_matching(r"^\s+todo_nag_strategy\s+\"synthetic_tool\"$", done.stdout)
    path.write_text('[agent]\nmax_rounds = 5\ntodo_nag_strategy = "loud"\n')
    done = doctor(env=env)
    assert done.returncode == 1
    assert f"  error: {path}:3: agent.todo_nag_strategy: invalid value 'loud'" in done.stdout


def test_each_mcp_server_is_started_and_its_tools_listed(tmp_path: Path) -> None:
    """A configured MCP server that starts: its tools; one that cannot: why; exit 1."""
    echo = REPO / "tests" / "support" / "mcp_servers" / "echo_stdio.py"
    path = tmp_path / "config.toml"
    path.write_text(
        f'[mcp_servers.echo]\ncommand = "{sys.executable}"\nargs = ["{echo}"]\n\n'
        f'[mcp_servers.broken]\ncommand = "{tmp_path / "no-such-program"}"\n'
    )
    env = {"TETHER_CONFIG": str(path), "TETHER_HOME": str(tmp_path / "home")}
    done = doctor(env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout.split("MCP servers")[1]
    assert "echo (stdio): ready, 11 tools" in out
    assert "mcp__echo__peek" in line_matching(r"^    tools: ", out)
    assert line_matching(r"broken \(stdio\)", out).endswith(
        f"failed: No such file or directory: {tmp_path / 'no-such-program'}"
    )
    report = json.loads(doctor("--json", env=env).stdout)
    states = {s["name"]: (s["state"], len(s["tools"])) for s in report["mcp_servers"]}
    assert states == {"echo": ("ready", 11), "broken": ("failed", 0)}
