"""A provider that cannot be reached fails the turn at once: a name that does not resolve or a
refused port is a wrong base URL or a server that is not running, which minutes of backoff do
not cure. The one error names the host and the settings to check; no retry is announced (the
attempts are counted by the retry notices the client is sent, one before each new attempt)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.harness import REPO, spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(path: Path, url: str) -> Path:
    path.write_text(
        f'[providers.p]\nkind = "openai"\nbase_url = "{url}"\napi_key_env = "P_TEST_KEY"\n'
        'builtin_models = false\n\n[models."p:m"]\ncontext_window = 64000\n\n'
        '[defaults]\nmodel = "p:m"\n'
    )
    return path


def _urls() -> list[tuple[str, str, str]]:
    port = _closed_port()
    return [
        ("refused", f"http://127.0.0.1:{port}/v1", f"127.0.0.1:{port} refused the connection"),
        ("dns", "http://nonexistent.invalid/v1", "the name nonexistent.invalid does not resolve"),
    ]


@pytest.mark.parametrize(("why", "url", "said"), _urls(), ids=["refused", "dns"])
async def test_an_unreachable_provider_fails_the_turn_at_once(
    home: Path, project: Path, tmp_path: Path, why: str, url: str, said: str
) -> None:
    config = _config(tmp_path / "config.toml", url)
    env = {"TETHER_CONFIG": str(config), "P_TEST_KEY": "sk-test-0123456789abcdef"}
    async with spawn_agent(home, env=env) as agent:
        await agent.initialize(session={"notices": {}})
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "hi", timeout=30)
    message = resp["error"]["message"] + str(resp["error"].get("data", ""))
    assert said in message, message
    assert url in message and "[providers.p] base_url" in message and "P_TEST_KEY" in message
    notices = [u for u in agent.updates(sid) if u["sessionUpdate"] == "notice"]
    assert not [n for n in notices if "retrying" in str(n)], notices  # one attempt only


def test_ask_says_it_in_one_line_and_fails(home: Path, project: Path, tmp_path: Path) -> None:
    [_, (_, url, said)] = _urls()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TETHER_HOME": str(home)}
    env["TETHER_CONFIG"] = str(_config(tmp_path / "config.toml", url))
    done = subprocess.run(
        [sys.executable, "-m", "tether", "ask", "--cwd", str(project), "hi"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,  # the backoff it replaces took six minutes
    )
    assert done.returncode != 0
    [line] = [x for x in (done.stdout + done.stderr).splitlines() if said in x]
    assert "[providers.p] base_url" in line and "Traceback" not in done.stderr
