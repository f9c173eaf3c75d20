"""Configuration never fails silently, as the real commands show it: a bad key is named with
its file and line and left out alone (the rest of the file applies, its providers included);
what would make a run quietly wrong stops `tether ask` with exit 2 in one line, and makes
`tether doctor` fail."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.harness import REPO
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Reply

pytestmark = pytest.mark.slow


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as srv:
        yield srv


def run(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run(
        [sys.executable, "-m", "tether", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=cwd or REPO,
        timeout=90,
    )


def provider_config(server: MockLLMServer, *, before: str = "", after: str = "") -> str:
    return f"""{before}[providers.local]
kind = "openai"
base_url = "{server.url}/v1"
api_key = "sk-test-0000"
builtin_models = false

[models."local:m1"]

[defaults]
model = "local:m1"
{after}"""


def test_a_misspelled_key_is_named_and_the_rest_of_the_file_still_applies(
    tmp_path: Path, home: Path, project: Path, server: MockLLMServer
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(provider_config(server, after="\n[agent]\nmax_rouds = 5\n"))
    server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["from the provider"])))
    env = {"TETHER_CONFIG": str(config), "TETHER_HOME": str(home)}
    done = run("ask", "--cwd", str(project), "hello", env=env)
    assert done.returncode == 0, done.stderr
    assert "from the provider" in done.stdout  # not the offline demo model
    assert server.posts and server.posts[0].json()["model"] == "m1"
    assert f"tether: warning: {config}:13: agent.max_rouds: unknown key" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_value_is_left_out_alone(
    tmp_path: Path, home: Path, project: Path, server: MockLLMServer
) -> None:
    config = tmp_path / "config.toml"
    text = provider_config(server).replace('api_key = "sk', 'timeout = "soon"\napi_key = "sk')
    config.write_text(text)
    server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["still here"])))
    env = {"TETHER_CONFIG": str(config), "TETHER_HOME": str(home)}
    done = run("ask", "--cwd", str(project), "hello", env=env)
    assert done.returncode == 0, done.stderr
    assert "still here" in done.stdout
    assert f"{config}:4: providers.local.timeout: expected a number or a table" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "nope:x"], "--model: unknown model 'nope:x' (no provider named 'nope'"),
        ([], "[defaults] model ({config}:10): unknown model 'gone:m1' (no provider named 'gone'"),
    ],
)
def test_an_unknown_default_model_stops_ask_and_fails_doctor(
    tmp_path: Path, home: Path, project: Path, server: MockLLMServer, args: list[str], message: str
) -> None:
    config = tmp_path / "config.toml"
    text = provider_config(server)
    if not args:
        text = text.replace('model = "local:m1"', 'model = "gone:m1"')
    config.write_text(text)
    env = {"TETHER_CONFIG": str(config), "TETHER_HOME": str(home)}
    done = run("ask", *args, "--cwd", str(project), "hello", env=env)
    assert done.returncode == 2
    assert done.stderr.startswith(f"tether: error: {message.format(config=config)}")
    assert len(done.stderr.splitlines()) == 1 and done.stdout == ""
    assert server.posts == []
    doctor = run("doctor", *args, env=env)
    assert doctor.returncode == 1
    assert message.format(config=config) in doctor.stdout


@pytest.mark.parametrize("command", [["ask", "hello"], ["-p", "hello"]], ids=["ask", "-p"])
def test_a_named_config_file_that_does_not_exist_stops_ask(
    home: Path, tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "missing.toml"
    env = {"TETHER_CONFIG": str(missing), "TETHER_HOME": str(home)}
    done = run(*command, env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"tether: error: {missing}: no such file (named by TETHER_CONFIG")
    assert len(done.stderr.splitlines()) == 1
    doctor = run("doctor", env=env)
    assert doctor.returncode == 1 and f"{missing}: no such file" in doctor.stdout


def test_a_config_file_that_is_not_toml_stops_ask(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[agent]\nmax_rounds = = 3\n")
    env = {"TETHER_CONFIG": str(config), "TETHER_HOME": str(home)}
    done = run("ask", "hello", env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"tether: error: {config}:2: TOML syntax error")
    assert len(done.stderr.splitlines()) == 1
    assert run("doctor", env=env).returncode == 1


def test_an_unwritable_tether_home_stops_ask(tmp_path: Path) -> None:
    home = tmp_path / "file-not-dir"
    home.write_text("")  # a file where the directory should be: unwritable for anyone
    env = {"TETHER_HOME": str(home / "tether")}
    done = run("ask", "hello", env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"tether: error: TETHER_HOME {home / 'tether'} is not writable")
    assert len(done.stderr.splitlines()) == 1
    doctor = run("doctor", env=env)
    assert doctor.returncode == 1 and "is not writable" in doctor.stdout
