"""The user's file and the project's, merged key by key, each bad or refused key reported once
with its file and line and left out alone."""

from __future__ import annotations

from pathlib import Path

from tether.engine.config.resolve import Setup, load_setup


def setup_of(tmp_path: Path, user: str, project: str | None = None) -> tuple[Setup, Path, Path]:
    config = tmp_path / "user.toml"
    config.write_text(user)
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    if project is not None:
        (root / ".tether").mkdir()
        (root / ".tether" / "config.toml").write_text(project)
    inner = root / "a" / "b"
    inner.mkdir(parents=True)
    return load_setup({"TETHER_CONFIG": str(config)}, inner), config, root


def test_a_wrong_kind_leaves_its_provider_out_reported_once(tmp_path: Path) -> None:
    text = '[providers.a]\nkind = "opneai"\n\n[providers.b]\nkind = "openai"\n'
    setup, config, _ = setup_of(tmp_path, text)
    assert "b" in setup.providers and "a" not in setup.providers
    assert [i.render() for i in setup.issues] == [
        f"{config}:2: providers.a.kind: invalid value 'opneai' (expected one of: openai, "
        "openai-responses, anthropic, deepseek, deepseek-responses, deepseek-anthropic)"
    ]


def test_a_missing_required_key_leaves_its_table_out(tmp_path: Path) -> None:
    setup, config, _ = setup_of(tmp_path, '[providers.a]\nbase_url = "http://x"\n')
    assert setup.providers == {}
    assert [i.render() for i in setup.issues] == [
        f"{config}:1: providers.a.kind: missing (it is required)"
    ]


def test_several_bad_keys_each_cost_only_themselves(tmp_path: Path) -> None:
    text = "[agent]\nmax_rounds = 0\nparallel_tools = false\nretry_attempts = 'x'\n"
    setup, config, _ = setup_of(tmp_path, text)
    assert setup.agent.parallel_tools is False and setup.agent.max_rounds == 32
    assert [(i.path, i.line, i.key) for i in setup.issues] == [
        (config, 2, "agent.max_rounds"),
        (config, 4, "agent.retry_attempts"),
    ]


def test_the_project_wins_what_it_may_set_and_adds_to_lists(tmp_path: Path) -> None:
    user = '[agent]\nmax_rounds = 5\n\n[workspace]\ncommand_denylist = ["rm -rf"]\n'
    project = '[agent]\nmax_rounds = 9\n\n[workspace]\ncommand_denylist = ["curl"]\n'
    setup, _, root = setup_of(tmp_path, user, project)
    assert setup.agent.max_rounds == 9
    assert setup.command_denylist.entries == ("rm -rf", "curl")
    assert setup.project_file == root / ".tether" / "config.toml"
    assert setup.issues == []


def test_a_project_may_not_loosen_or_redirect(tmp_path: Path) -> None:
    project = (
        '[providers.x]\nkind = "openai"\n\n[agent]\nauto_continue_limits = true\n'
        'default_mode = "read-only"\n\n[trash]\nenabled = false\n'
    )
    setup, _, root = setup_of(tmp_path, "", project)
    local = root / ".tether" / "config.toml"
    assert "x" not in setup.providers and setup.trash is True
    assert setup.agent.auto_continue_limits is False
    assert setup.agent.default_mode == "read-only"  # tightening is allowed
    assert [(i.path, i.line, i.key) for i in setup.issues] == [
        (local, 1, "providers"),
        (local, 5, "agent.auto_continue_limits"),
        (local, 9, "trash.enabled"),
    ]
