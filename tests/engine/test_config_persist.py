"""Settings written back to the user's config file (issue 32, item 8): `/model ID --persist`
over ACP (the file keeps its comments; the next `tether acp` starts sessions on that model),
the line edit's cases, and `tether config edit` as a real subprocess with a scripted editor."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.harness import REPO, spawn_agent
from tether.engine.config.persist import persist_default_model
from tether.errors import ConfigError

CONFIG = """\
# my tether settings: keep this comment
[providers.p]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"   # nothing listens: no request is sent in this test
builtin_models = false

[models."p:a"]
context_window = 64000

[models."p:b"]
context_window = 64000

[defaults]
# the model I use most
model = "p:a"   # was b last week
"""


def _said(updates: list[dict[str, object]]) -> str:
    return "".join(
        str(u["content"]["text"])  # type: ignore[index]
        for u in updates
        if u["sessionUpdate"] == "agent_message_chunk"
    )


def _model_option(result: dict[str, object]) -> str:
    options = result["configOptions"]
    assert isinstance(options, list)
    [model] = [o for o in options if o["id"] == "model"]
    return model["currentValue"]


@pytest.mark.slow
@pytest.mark.anyio
async def test_model_persist_writes_the_default_and_keeps_the_comments(
    home: Path, project: Path, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    env = {"TETHER_CONFIG": str(path)}
    async with spawn_agent(home, env=env) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        done = await agent.prompt(sid, "/model p:b --persist")
        assert done["result"] == {"stopReason": "end_turn"}
        said = _said(agent.updates(sid))
    assert "Model is now **p:b**." in said
    assert f"Saved as the default model (`[defaults] model` in {path})" in said
    assert path.read_text() == CONFIG.replace('model = "p:a"   #', 'model = "p:b"   #')
    async with spawn_agent(home, env=env) as agent:
        await agent.initialize()
        fresh = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
    assert _model_option(fresh["result"]) == "p:b"


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_unknown_model_is_not_persisted(home: Path, project: Path, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    async with spawn_agent(home, env={"TETHER_CONFIG": str(path)}) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "/model p:nope --persist")
    assert path.read_text() == CONFIG


def test_the_line_edit_adds_inserts_creates_and_refuses(tmp_path: Path) -> None:
    no_defaults = tmp_path / "a.toml"
    no_defaults.write_text("# top\n[agent]\nmax_rounds = 5  # mine\n")
    persist_default_model(no_defaults, "p:m")
    assert no_defaults.read_text() == (
        '# top\n[agent]\nmax_rounds = 5  # mine\n\n[defaults]\nmodel = "p:m"\n'
    )
    header_only = tmp_path / "b.toml"
    header_only.write_text("[defaults]   # here\n\n[agent]\nmax_rounds = 5\n")
    persist_default_model(header_only, "p:m")
    assert header_only.read_text() == (
        '[defaults]   # here\nmodel = "p:m"\n\n[agent]\nmax_rounds = 5\n'
    )
    missing = tmp_path / "new" / "config.toml"
    persist_default_model(missing, "p:m")
    assert missing.read_text() == '[defaults]\nmodel = "p:m"\n'
    assert stat.S_IMODE(missing.stat().st_mode) == 0o600
    inline = tmp_path / "c.toml"
    inline.write_text('defaults = { model = "p:a" }\n')
    with pytest.raises(ConfigError) as refused:
        persist_default_model(inline, "p:m")
    assert "c.toml:1: defaults.model: [defaults] is not a table header here" in str(refused.value)
    assert inline.read_text() == 'defaults = { model = "p:a" }\n'
    broken = tmp_path / "d.toml"
    broken.write_text("[agent]\nmax_rounds = 0\n")
    with pytest.raises(ConfigError) as invalid:
        persist_default_model(broken, "p:m")
    assert "d.toml:2: agent.max_rounds: must be >= 1" in str(invalid.value)
    assert broken.read_text() == "[agent]\nmax_rounds = 0\n"  # left as it was


EDITOR = """\
import sys
path = sys.argv[-1]
with open(path, "a", encoding="utf-8") as f:
    f.write(open(sys.argv[1], encoding="utf-8").read())
"""


def _config_edit(tmp_path: Path, path: Path, added: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TETHER_CONFIG": str(path)}
    env.pop("VISUAL", None)
    env.pop("EDITOR", None)
    if added is not None:
        (tmp_path / "editor.py").write_text(EDITOR)
        (tmp_path / "added.toml").write_text(added)
        editor = f"{sys.executable} {tmp_path / 'editor.py'} {tmp_path / 'added.toml'}"
        env["VISUAL"] = editor
    return subprocess.run(
        [sys.executable, "-m", "tether", "config", "edit"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.slow
def test_config_edit_creates_opens_and_checks_the_file(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "config.toml"
    bad = _config_edit(tmp_path, path, "\n[agent]\nmax_rounds = 0\n")
    assert f"wrote the commented example to {path}" in bad.stdout
    text = path.read_text()
    assert text.startswith("#")  # the example, then what the "editor" typed
    line = text.splitlines().index("max_rounds = 0") + 1
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert f"  error: {path}:{line}: agent.max_rounds: must be >= 1" in bad.stdout
    path.write_text("[agent]\nmax_rounds = 7   # kept\n")
    good = _config_edit(tmp_path, path, "mcp_instructions = false\n")
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.strip() == f"{path}: ok"
    assert path.read_text() == "[agent]\nmax_rounds = 7   # kept\nmcp_instructions = false\n"
    none = _config_edit(tmp_path, path, None)
    assert none.returncode == 2
    assert "set $VISUAL or $EDITOR" in none.stderr
