"""Whole invocations, as a scripted model makes them through `tether acp`, judged by effects:

- an environment that makes a known read-only command run a program (`GIT_CONFIG_PARAMETERS`,
  `GIT_CONFIG_COUNT`/`KEY`/`VALUE`, `GIT_EXTERNAL_DIFF`), through `run_argv`, every kind of
  `run_argv_batch` stage and `open_pty`: the marker file the program would write never
  appears where it must not (outside the project when confined, anywhere when it asked and
  was refused), and the permission request the client receives names the variable;
- an "always" answer for one environment (or one input to a shell) does not cover another;
- a reader naming a credential file outside the project asks, and the file's text reaches
  neither the model nor the store;
- the provider key the config names (`api_key_env`), and credentials inside
  `TETHER_SEARXNG_URL`, reach no command: run, piped, on a PTY, confined or not;
- a confined call's own variables act inside the sandbox only: `PATH` does not choose the
  programs of its unconfined launcher, nor `LD_PRELOAD` load a library into it;
- a project's tests still run unasked in `code` mode and find their virtualenv.

Each runs in `ask` mode, in `code` mode and with `TETHER_SANDBOX=none`, under both
mechanisms where a sandbox applies; a control without a sandbox, everything allowed, shows that
the attacks are real."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.harness import AgentProcess, script, spawn_agent
from tests.support.sandbox_world import World, git, world
from tests.support.stored import tool_results

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="the Linux sandbox"),
]

Call = tuple[str, dict[str, Any]]


@pytest.fixture
def w() -> Iterator[World]:
    with world() as made:
        yield made


async def _session(
    w: World,
    rounds: list[list[Call]],
    *,
    mechanism: str,
    mode: str,
    choice: str = "reject_once",
    env: dict[str, str] | None = None,
    config: str = "",
    agent_hook: Any = None,
) -> tuple[str, AgentProcess]:
    """One turn per round, each making its calls; the session id and the agent (its frames)."""
    (w.tether_home / "config.toml").write_text(config)
    events: list[list[dict[str, Any]]] = []
    for r, calls in enumerate(rounds):
        events.append(
            [
                {"tool_call": {"id": f"r{r}c{c}", "name": name, "arguments": args}}
                for c, (name, args) in enumerate(calls)
            ]
        )
        events.append([{"text": f"done {r}"}])
    path = script(w.root / "turns.json", events)
    full = {
        **w.env(),
        "TETHER_SANDBOX": mechanism,
        "TETHER_CONFIG": str(w.tether_home / "config.toml"),
        **(env or {}),
    }
    async with spawn_agent(w.tether_home, "--script", str(path), env=full) as agent:
        agent.permission_choice = choice
        if agent_hook is not None:
            agent.handler = agent_hook(agent)
        await agent.initialize(terminal=False)
        sid = await agent.new_session(w.project)
        resp = await agent.request("session/set_mode", {"sessionId": sid, "modeId": mode})
        assert resp["result"] == {}
        for r in range(len(rounds)):
            resp = await agent.prompt(sid, f"round {r}", timeout=60)
            assert resp["result"] == {"stopReason": "end_turn"}, resp
    return sid, agent


def _asked(agent: AgentProcess) -> list[str]:
    """The text of every permission request the client received (title and card)."""
    return [
        json.dumps(f["params"]["toolCall"])
        for f in agent.frames
        if f.get("method") == "session/request_permission"
    ]


def _stored(w: World) -> bytes:
    """Every byte of the session store (the database and its write-ahead log)."""
    return b"".join(p.read_bytes() for p in w.tether_home.glob("tether.db*") if p.is_file())


# --- readers naming credential files ----------------------------------------------------------

CREDENTIALS = {
    ".codex/auth.json": '{"OPENAI_API_KEY": "cred-codex-1f"}',
    ".claude/.credentials.json": '{"accessToken": "cred-claude-2e"}',
    ".cargo/credentials.toml": '[registry]\ntoken = "cred-cargo-3d"',
    ".config/rclone/rclone.conf": "[s3]\nsecret_access_key = cred-rclone-4c",
    ".pgpass": "db:5432:*:me:cred-pgpass-5b",
    ".bash_history": "export TOKEN=cred-history-6a",
}
MARKS = [text.rsplit("cred-", 1)[1].strip('"}') for text in CREDENTIALS.values()]


def _plant_credentials(w: World) -> None:
    for rel, text in CREDENTIALS.items():
        path = w.home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    (w.project / "docs").mkdir()
    (w.project / "docs" / "home").symlink_to(w.home)  # a link in the project pointing out


def _read_rounds(w: World) -> list[list[Call]]:
    absolute = [str(w.home / rel) for rel in CREDENTIALS]
    relative = os.path.relpath(w.home / ".pgpass", w.project)
    piped = {"nodes": [{"argv": ["cat", absolute[3]], "pipe": {"argv": ["wc"]}}]}
    return [
        [("run_argv", {"argv": ["cat", *absolute]})],
        [("run_argv", {"argv": ["head", "-n", "5", relative]})],
        [("run_argv", {"argv": ["cat", "docs/home/.cargo/credentials.toml"]})],
        [("run_argv", {"argv": ["grep", "-r", "cred-", str(w.home)]})],
        [("run_argv", {"argv": ["tail", "src/../docs/home/.bash_history"]})],
        [("run_argv_batch", piped)],
    ]


def _shown(w: World, sid: str, agent: AgentProcess) -> list[str]:
    seen = json.dumps(agent.frames) + "\n".join(tool_results(w.tether_home, sid))
    stored = _stored(w).decode("utf-8", "replace")
    return [m for m in MARKS if f"cred-{m}" in seen or f"cred-{m}" in stored]


# --- an environment that runs a program -------------------------------------------------------

VARIABLES = ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_EXTERNAL_DIFF")


def _env_attacks(w: World) -> list[tuple[str, list[Call]]]:
    """(marker name, the calls of one round): each would run `touch <outside>/<marker>`."""

    def touch(name: str) -> str:
        return f"touch {w.outside / name}"

    def params(name: str) -> dict[str, str]:
        return {"GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='{touch(name)}; false'"}

    counted = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.fsmonitor",
        "GIT_CONFIG_VALUE_0": f"{touch('m_count')}; false",
    }

    def ext(name: str) -> dict[str, str]:
        return {"GIT_EXTERNAL_DIFF": f"{touch(name)} #"}  # git appends the file's arguments

    status, diff = ["git", "status"], ["git", "--no-pager", "diff"]

    def piped(name: str) -> dict[str, Any]:
        return {"nodes": [{"argv": ["echo"], "pipe": {"argv": diff, "env": ext(name)}}]}

    def inherited(name: str) -> dict[str, Any]:
        return {"nodes": [{"argv": ["true"], "env": params(name), "then": {"argv": status}}]}

    return [
        ("m_params", [("run_argv", {"argv": status, "env": params("m_params")})]),
        ("m_count", [("run_argv", {"argv": status, "env": counted})]),
        ("m_ext", [("run_argv", {"argv": diff, "env": ext("m_ext")})]),
        ("m_pipe", [("run_argv_batch", piped("m_pipe"))]),
        ("m_then", [("run_argv_batch", inherited("m_then"))]),
        ("m_pty", [("open_pty", {"argv": diff, "env": ext("m_pty")})]),
    ]


def _env_rounds(w: World) -> list[list[Call]]:
    rounds: list[list[Call]] = []
    for marker, calls in _env_attacks(w):
        rounds.append(calls)
        if marker == "m_pty":  # wait for the PTY's program to end (at once when none started)
            wait = {"pty_id": 1, "until": "never printed", "timeout_seconds": 15}
            rounds.append([("read_pty", wait)])
    return rounds


def _markers(w: World) -> list[str]:
    return sorted(p.name for p in w.root.rglob("m_*"))


@pytest.mark.parametrize(
    ("mechanism", "mode"),
    [
        ("bubblewrap", "ask"),
        ("landlock", "ask"),
        ("none", "code"),
        ("none", "ask"),
        ("bubblewrap", "code"),  # runs unasked, confined: the marker outside is refused
        ("landlock", "code"),
    ],
)
async def test_an_environment_that_runs_a_program_or_a_read_outside_asks(
    w: World, mechanism: str, mode: str
) -> None:
    """Where the allowlist decides (`ask` mode, no sandbox), each attack asks, the card naming
    its variable; refused, nothing ran and no credential was shown. Confined in `code` mode,
    the environment attacks run unasked and write nothing outside (the reads there are the
    sandbox's hidden list's to stop)."""
    asks = not (mode == "code" and mechanism != "none")
    _plant_credentials(w)
    rounds = _env_rounds(w) + (_read_rounds(w) if asks else [])
    sid, agent = await _session(w, rounds, mechanism=mechanism, mode=mode)
    assert _markers(w) == []
    asked = _asked(agent)
    if not asks:
        assert asked == []
        return
    assert _shown(w, sid, agent) == []
    # Every attack asked (a read_pty asks nothing), each environment card naming its variable.
    assert len(asked) == len(_env_attacks(w)) + len(_read_rounds(w)), asked
    for card in asked[: len(_env_attacks(w))]:
        assert any(v in card for v in VARIABLES), card
    assert "core.fsmonitor" in asked[0] and "touch" in asked[0]


async def test_without_a_sandbox_the_attacks_are_real(w: World) -> None:
    """The control: unconfined and allowed, every attack writes its marker or shows its
    credential, and the preloaded library of the launcher test below writes its file."""
    _plant_credentials(w)
    preload = {"LD_PRELOAD": _preload_library(), "PCPROFILE_OUTPUT": str(w.outside / "m_preload")}
    rounds = [*_env_rounds(w), *_read_rounds(w), [("run_argv", {"argv": ["true"], "env": preload})]]
    sid, agent = await _session(w, rounds, mechanism="none", mode="ask", choice="allow_once")
    assert _markers(w) == sorted([*(m for m, _ in _env_attacks(w)), "m_preload"])
    assert _shown(w, sid, agent) == MARKS


async def test_always_covers_the_environment_and_the_input_it_was_given(w: World) -> None:
    """ "Always allow" the harmless call, then the same argv with another environment (or
    another input for a shell) asks again; refused, its marker never appears."""
    harmless_env = {"GIT_EXTERNAL_DIFF": "true"}
    evil_env = {"GIT_EXTERNAL_DIFF": f"touch {w.outside / 'm_always_env'} #"}
    diff = ["git", "--no-pager", "diff"]
    rounds: list[list[Call]] = [
        [("run_argv", {"argv": diff, "env": harmless_env})],
        [("run_argv", {"argv": diff, "env": evil_env})],
        [("run_argv", {"argv": ["sh"], "stdin": "true\n"})],
        [("run_argv", {"argv": ["sh"], "stdin": f"touch {w.outside / 'm_always_stdin'}\n"})],
    ]
    answers = iter(["allow_always", "reject_once", "allow_always", "reject_once"])

    def hook(agent: AgentProcess) -> Any:
        async def handle(method: str, params: Any) -> Any:
            assert method == "session/request_permission", method
            kind = next(answers)
            [option] = [o for o in params["options"] if o["kind"] == kind]
            return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

        return handle

    sid, agent = await _session(w, rounds, mechanism="none", mode="ask", agent_hook=hook)
    assert len(_asked(agent)) == 4  # the second and fourth were asked again
    assert _markers(w) == []
    results = tool_results(w.tether_home, sid)
    assert "exit code 0" in results[0] and "REJECTED" in results[1], results


# --- provider keys in the environment ---------------------------------------------------------

KEY = "sk-ant-work-key-0d1e2f"
SEARX_PASSWORD = "searx-pass-9c8b"
PROVIDER_CONFIG = """
[providers.work]
kind = "anthropic"
api_key_env = "WORK_ANTHROPIC_KEY"
"""


def _key_rounds() -> list[list[Call]]:
    probe = "import os; print(sorted(os.environ.items()))"
    return [
        [("run_argv", {"argv": ["printenv", "WORK_ANTHROPIC_KEY"]})],
        [("run_argv", {"argv": ["printenv", "TETHER_SEARXNG_URL"]})],
        [("run_argv", {"argv": ["env"]})],
        [("run_argv", {"argv": [sys.executable, "-c", probe]})],
        [("run_argv_batch", {"nodes": [{"argv": ["env"], "pipe": {"argv": ["cat"]}}]})],
        [("open_pty", {"argv": ["env"]})],
        [("read_pty", {"pty_id": 1, "until": "never printed", "timeout_seconds": 10})],
        [("run_argv", {"argv": ["printenv", "HOME"]})],
    ]


@pytest.mark.parametrize(
    ("mechanism", "mode"),
    [("bubblewrap", "code"), ("landlock", "code"), ("none", "ask"), ("none", "code")],
)
async def test_a_configured_provider_key_reaches_no_command(
    w: World, mechanism: str, mode: str
) -> None:
    env = {
        "WORK_ANTHROPIC_KEY": KEY,
        "TETHER_SEARXNG_URL": f"http://tether:{SEARX_PASSWORD}@127.0.0.1:9/",
    }
    sid, agent = await _session(
        w,
        _key_rounds(),
        mechanism=mechanism,
        mode=mode,
        choice="allow_once",  # everything runs
        env=env,
        config=PROVIDER_CONFIG,
    )
    results = tool_results(w.tether_home, sid)
    assert results[-1].endswith(f"exit code 0\n{w.home}"), results[-1]  # the commands ran
    assert "PATH=" in results[2] and "TETHER_OWNER=" in results[2], results[2]
    frames = json.dumps(agent.frames)
    for secret in (KEY, SEARX_PASSWORD):
        assert secret not in frames
        assert not any(secret in r for r in results), results
        assert secret.encode() not in _stored(w)


# --- a project's tests, in its virtualenv -------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock"])
async def test_a_projects_tests_find_its_virtualenv(w: World, mechanism: str) -> None:
    venv = w.project / ".venv"
    base = getattr(sys, "_base_executable", sys.executable)
    await anyio.run_process([base, "-m", "venv", "--without-pip", str(venv)])
    [site] = list(venv.glob("lib/python*/site-packages"))
    (site / "only_in_the_venv.py").write_text("WHERE = 'venv'\n")
    (w.project / ".gitignore").write_text(".env\n.venv/\n")
    (w.project / "test_venv.py").write_text(
        "import os, sys, unittest\n"
        "import only_in_the_venv\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_venv(self):\n"
        "        self.assertEqual(only_in_the_venv.WHERE, 'venv')\n"
        f"        self.assertEqual(os.environ['VIRTUAL_ENV'], {str(venv)!r})\n"
        f"        self.assertTrue(sys.prefix == {str(venv)!r})\n"
    )
    git(w.project, "add", ".gitignore", "test_venv.py")
    git(w.project, "commit", "-q", "-m", "tests")
    activated = {
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }
    rounds: list[list[Call]] = [[("run_argv", {"argv": ["python", "-m", "unittest", "-v"]})]]
    sid, agent = await _session(w, rounds, mechanism=mechanism, mode="code", env=activated)
    assert _asked(agent) == []
    [ran] = tool_results(w.tether_home, sid)
    assert "exit code 0" in ran and "Ran 1 test" in ran and "OK" in ran, ran


# --- the call's variables and the launcher --------------------------------------------------------


def _preload_library() -> str:
    """glibc's libpcprofile.so: loaded, it creates the file PCPROFILE_OUTPUT names (a library
    that writes a file when loaded, with no compiler needed)."""
    found = sorted(Path("/").glob("usr/lib*/**/libpcprofile.so")) + sorted(
        Path("/").glob("lib*/**/libpcprofile.so")
    )
    assert found, "glibc's libpcprofile.so is missing (package libc6)"
    return str(found[0])


@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock"])
async def test_the_calls_variables_never_reach_the_unconfined_launcher(
    w: World, mechanism: str
) -> None:
    """In `code` mode a confined command runs unasked, whatever its variables; they must act
    inside the sandbox only. Before they did, `PATH` chose the `rm` the launcher runs and
    `LD_PRELOAD` loaded a library into it, both outside the sandbox."""
    tools = w.project / "tools"
    tools.mkdir()
    fake_rm = tools / "rm"
    fake_rm.write_text(f'#!/bin/sh\ntouch {w.outside / "m_launcher_path"}\nexec /bin/rm "$@"\n')
    fake_rm.chmod(0o755)
    rounds: list[list[Call]] = [
        [("run_argv", {"argv": ["true"], "env": {"PATH": f"{tools}:/usr/bin:/bin"}})],
        [
            (
                "run_argv",
                {
                    "argv": ["true"],
                    "env": {
                        "LD_PRELOAD": _preload_library(),
                        "PCPROFILE_OUTPUT": str(w.outside / "m_launcher_preload"),
                    },
                },
            )
        ],
        [
            (
                "run_argv",
                {"argv": ["printenv", "PCPROFILE_OUTPUT"], "env": {"PCPROFILE_OUTPUT": "x"}},
            )
        ],
    ]
    sid, agent = await _session(w, rounds, mechanism=mechanism, mode="code")
    assert _asked(agent) == []
    assert _markers(w) == []
    assert tool_results(w.tether_home, sid)[2].endswith("exit code 0\nx")  # set inside
