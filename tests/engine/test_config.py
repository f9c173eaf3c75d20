"""The config file, the environment's providers and the default model: from TOML and variables
to the catalog `tether acp` serves, and errors that name their key and line."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.harness import REPO, spawn_agent
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tether.cli.main import _fast_acp_args
from tether.engine.config.adapters import make_adapter
from tether.engine.config.catalog import ModelCatalog
from tether.engine.config.file import example_config, load_config, parse_config
from tether.engine.config.load import build_catalog, load_catalog
from tether.engine.config.resolve import resolve
from tether.engine.config.toml_lines import index_keys, line_of
from tether.engine.providers.anthropic_adapter import AnthropicMessages
from tether.engine.providers.base import LLM
from tether.engine.providers.common import HTTPProvider
from tether.engine.providers.openai_chat_adapter import OpenAIChat
from tether.engine.providers.openai_responses_adapter import OpenAIResponses
from tether.errors import ConfigError
from tether.paths import config_path

FULL = """\
# a comment
[providers.work]
kind = "anthropic"
api_key_env = "WORK_KEY"
timeout = { connect = 5, read = 120 }
headers = { "X-Team" = "tools" }

[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:8080/v1"
builtin_models = false

[models."local:qwen"]
name = "Qwen (local)"
context_window = 32768
max_output_tokens = 4096
images = true
reasoning = ["low", "medium", "high"]
default_reasoning = "medium"
input_price = 0.1
output_price = 0.2
cached_input_price = 0.05
currency = "EUR"

[models."work:claude-sonnet-5-5"]
input_price = 2.5

[defaults]
model = "local:qwen"
"""


def catalog_of(text: str | None, **env: str) -> ModelCatalog:
    config = parse_config(text) if text is not None else None
    return build_catalog(config, env=env)


def http(model: LLM) -> HTTPProvider:
    assert isinstance(model, HTTPProvider)
    return model


def errors_of(text: str, **env: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        build_catalog(parse_config(text, Path("/cfg/config.toml")), env=env)
    return str(caught.value).splitlines()


# --- the file ---------------------------------------------------------------------------------


def test_full_file_builds_the_catalog() -> None:
    catalog = catalog_of(FULL, WORK_KEY="sk-work")
    assert catalog.default == "local:qwen"
    qwen = catalog.infos["local:qwen"]
    assert (qwen.name, qwen.context_window, qwen.max_output_tokens, qwen.images) == (
        "Qwen (local)",
        32768,
        4096,
        True,
    )
    assert qwen.reasoning_levels == ("low", "medium", "high")
    assert qwen.default_reasoning == "medium"
    assert (qwen.input_price, qwen.output_price, qwen.cached_input_price) == (0.1, 0.2, 0.05)
    assert qwen.currency == "EUR"
    # builtin_models = false: only the listed model; the anthropic provider keeps its built-ins
    assert [i for i in catalog.infos if i.startswith("local:")] == ["local:qwen"]
    sonnet = catalog.infos["work:claude-sonnet-5-5"]
    assert sonnet.input_price == 2.5  # overridden
    assert sonnet.output_price == 10.0 and sonnet.context_window == 1_000_000  # kept
    assert "work:claude-haiku-5-5" in catalog and "demo" in catalog


def test_factories_open_the_right_adapter_with_the_provider_settings() -> None:
    catalog = catalog_of(FULL, WORK_KEY="sk-work")
    work = catalog.open("work:claude-sonnet-5-5")
    assert isinstance(work, AnthropicMessages)
    assert (work.base_url, work.api_key, work.model, work.name) == (
        "https://api.anthropic.com",
        "sk-work",
        "claude-sonnet-5-5",
        "work",
    )
    assert work._extra_headers == {"X-Team": "tools"}
    timeout = work._timeout
    assert (timeout.connect, timeout.read) == (5.0, 120.0)
    local = catalog.open("local:qwen")
    assert isinstance(local, OpenAIChat) and not local.deepseek
    assert local.api_key == "" and local.base_url == "http://127.0.0.1:8080/v1"
    # Sessions of one provider share its HTTP client.
    again = catalog.open("local:qwen")
    assert isinstance(again, HTTPProvider)
    assert again._get_client() is local._get_client()


@pytest.mark.parametrize(
    ("kind", "cls", "deepseek", "url"),
    [
        ("openai", OpenAIChat, False, "https://api.openai.com/v1"),
        ("openai-responses", OpenAIResponses, False, "https://api.openai.com/v1"),
        ("anthropic", AnthropicMessages, None, "https://api.anthropic.com"),
        ("deepseek", OpenAIChat, True, "https://api.deepseek.com"),
        ("deepseek-responses", OpenAIResponses, True, "https://api.deepseek.com"),
        ("deepseek-anthropic", AnthropicMessages, None, "https://api.deepseek.com/anthropic"),
    ],
)
def test_each_kind_maps_to_its_adapter(
    kind: str, cls: type[HTTPProvider], deepseek: bool | None, url: str
) -> None:
    setup = resolve(parse_config(f'[providers.p]\nkind = "{kind}"\napi_key = "k"\n'), env={})
    model_id = next(iter(setup.models))
    adapter = make_adapter(setup.providers["p"], model_id.split(":", 1)[1], setup.models[model_id])
    assert type(adapter) is cls and adapter.base_url == url
    if deepseek is not None:
        assert isinstance(adapter, OpenAIChat | OpenAIResponses)
        assert adapter.deepseek is deepseek


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # unknown keys, at every level, each named with its line
        ("[providers.a]\nkind = 'openai'\ncolour = 1\n", ":3: providers.a.colour: unknown key"),
        (
            "x = 1\n",
            ":1: x: unknown key (expected one of: providers, models, defaults, workspace, web, "
            "mcp_servers, sandbox, agent, skills, trash)",
        ),
        ("[defaults]\nmodle = 'demo'\n", ":2: defaults.modle: unknown key"),
        (
            "[providers.a]\nkind = 'openai'\ntimeout = { connect = 1, red = 2 }\n",
            ":3: providers.a.timeout.red: unknown key (expected one of: connect, read)",
        ),
        ('[models."a:b"]\n\nwindow = 5\n[providers.a]\nkind="openai"\n', ':3: models."a:b".window'),
        # values
        (
            "[providers.a]\nkind = 'opneai'\n",
            ":2: providers.a.kind: invalid value 'opneai' (expected one of: openai, openai-responses",
        ),
        ("[providers.a]\n# kind?\n", ":1: providers.a.kind: missing (it is required)"),
        (
            '[providers.a]\nkind = "openai"\n[models."a:m"]\ncontext_window = "big"\n',
            ':4: models."a:m".context_window: expected an integer, got a string',
        ),
        (
            '[providers.a]\nkind = "openai"\n[models."a:m"]\nreasoning = ["low", "hgh"]\n',
            ":4: models.\"a:m\".reasoning: invalid value 'hgh'",
        ),
        ("[providers.a]\nkind = 'openai'\ntimeout = 0\n", ":3: providers.a.timeout: must be > 0"),
        (
            "[providers.a]\nkind = 'openai'\nbase_url = 'localhost:1234'\n",
            ":3: providers.a.base_url: expected an http:// or https:// URL",
        ),
        (
            "[providers.a]\nkind = 'openai'\napi_key = 'k'\napi_key_env = 'K'\n",
            ":4: providers.a.api_key_env: set api_key or api_key_env, not both",
        ),
        ("[models.gpt]\n", ':1: models.gpt: a model is named "provider:model"'),
        # other ways to write a key: inline tables and dotted keys
        (
            "\n[providers]\nlocal = { kind = 'nope' }\n",
            ":3: providers.local.kind: invalid value 'nope'",
        ),
        ('\n\nproviders.x.kind = "openai"\nproviders.x.port = 1\n', ":4: providers.x.port"),
        # references, checked once the environment's providers are known
        ('\n[models."ghost:m"]\n', ":2: models.\"ghost:m\": no provider named 'ghost'"),
        ("[defaults]\nmodel = 'ghost:m'\n", ":2: defaults.model: no provider named 'ghost'"),
        (
            '[providers.a]\nkind = "anthropic"\n[models."a:claude-sonnet-5-5"]\n'
            'default_reasoning = "none"\n',
            ':4: models."a:claude-sonnet-5-5".default_reasoning: is not one of the model\'s '
            "reasoning levels (low, medium, high, xhigh, max)",
        ),
        (
            '[providers.a]\nkind = "openai"\n[models."a:m"]\nmax_output_tokens = 9000\n'
            "context_window = 8000\n",
            ':4: models."a:m".max_output_tokens: exceeds context_window (8000)',
        ),
        # syntax: tomllib's own line
        (
            "[workspace]\ncommand_env = [\n  'JAVA_TOOL_OPTIONS',\n]\nspill_days = 1\n"
            "command_env_extra = 1\n",
            ":6: workspace.command_env_extra: unknown key",
        ),
        (
            "[workspace]\ncommand_env = ['MY TOOL']\n",
            ":2: workspace.command_env: 'MY TOOL' is not a variable name",
        ),
        (
            "[providers.w]\nkind = 'anthropic'\napi_key_env = 'WORK_KEY'\n\n[workspace]\n"
            "command_env = ['LANG', 'WORK_KEY']\n",
            ":6: workspace.command_env: 'WORK_KEY' holds the key of provider 'w'",
        ),
        (
            "[web.deepseek]\napi_key_env = 'SEARCH_KEY'\n[workspace]\ncommand_env = ['SEARCH_KEY']\n",
            ":4: workspace.command_env: 'SEARCH_KEY' holds the key of the web provider deepseek",
        ),
        ("a = 1\nb = = 2\n", ":2: TOML syntax error: Invalid value (column 5)"),
        ("a = [\n  1,\n", ":2: TOML syntax error:"),
    ],
)
def test_errors_name_key_and_line(text: str, expected: str) -> None:
    lines = errors_of(text)
    assert any(line.startswith("/cfg/config.toml" + expected) for line in lines), lines


def test_every_problem_is_reported_in_line_order() -> None:
    text = "[providers.a]\nkind = 'nope'\ncolour = 1\n[defaults]\nmodel = 1\n"
    lines = errors_of(text)
    assert [re.sub(r":\s.*", "", line) for line in lines] == [
        "/cfg/config.toml:2",
        "/cfg/config.toml:3",
        "/cfg/config.toml:5",
    ]


def test_a_key_pasted_into_api_key_env_is_not_echoed() -> None:
    lines = errors_of("[providers.a]\nkind = 'openai'\napi_key_env = 'sk-secret-123'\n")
    assert "expected the name of an environment variable" in lines[0]
    assert "sk-secret" not in "\n".join(lines)


def test_command_env_names_more_variables_for_commands() -> None:
    config = parse_config("[workspace]\ncommand_env = ['JAVA_TOOL_OPTIONS', 'MYCO_*']\n")
    setup = resolve(config, env={})
    assert setup.command_env == ("JAVA_TOOL_OPTIONS", "MYCO_*")
    # What commands never see: every provider's and web provider's key variable, the
    # SearXNG URL (it may carry credentials), and the built-in kinds' variables.
    text = "[providers.w]\nkind = 'anthropic'\napi_key_env = 'WORK_KEY'\n"
    secret = resolve(parse_config(text), env={}).secret_env
    assert {"WORK_KEY", "TETHER_SEARXNG_URL", "OPENAI_API_KEY", "DEEPSEEK_API_KEY"} <= secret


def test_key_lines_skip_multiline_values() -> None:
    text = 'a = """\n[fake]\nb = 1\n"""\nc = [\n  "]", # ]\n  2,\n]\n[t."x.y"]\nd = 1\n'
    index = index_keys(text)
    assert index[("a",)] == 1 and index[("c",)] == 5
    assert ("fake",) not in index and ("b",) not in index
    assert index[("t", "x.y", "d")] == 10
    assert line_of(index, ("t", "x.y", "missing")) == 9


def test_missing_file_is_no_config(tmp_path: Path) -> None:
    assert load_config(tmp_path / "none.toml") is None
    assert config_path({"TETHER_CONFIG": str(tmp_path / "c.toml")}) == tmp_path / "c.toml"
    default = config_path({})
    assert default.name == "config.toml" and default.parent.name == "tether"


# --- the environment --------------------------------------------------------------------------


def test_no_provider_means_demo_only() -> None:
    catalog = catalog_of(None)
    assert catalog.default == "demo" and list(catalog.infos) == ["demo"]


def test_env_providers_with_default_urls_and_models() -> None:
    catalog = catalog_of(None, OPENAI_API_KEY="o", ANTHROPIC_API_KEY="a", DEEPSEEK_API_KEY="d")
    assert catalog.default == "openai:gpt-5.5"  # nothing chosen: the first provider's first model
    ids = list(catalog.infos)
    for expected in (
        "openai:gpt-5.4",
        "openai:gpt-5.4-mini",
        "anthropic:claude-sonnet-5-5",
        "deepseek:deepseek-flash",
        "deepseek:deepseek-v4-pro",
    ):
        assert expected in ids
    assert catalog.infos["anthropic:claude-sonnet-5-5"].reasoning_levels
    openai = catalog.open("openai:gpt-5.4")
    assert isinstance(openai, OpenAIChat)
    assert (openai.base_url, openai.api_key) == ("https://api.openai.com/v1", "o")
    deepseek = catalog.open("deepseek:deepseek-v4-pro")
    assert isinstance(deepseek, OpenAIChat) and deepseek.deepseek
    assert deepseek.base_url == "https://api.deepseek.com"
    anthropic = catalog.open("anthropic:claude-sonnet-5-5")
    assert isinstance(anthropic, AnthropicMessages)
    assert anthropic.base_url == "https://api.anthropic.com"


def test_env_base_urls_and_empty_keys() -> None:
    catalog = catalog_of(
        None,
        OPENAI_API_KEY="o",
        OPENAI_BASE_URL="http://127.0.0.1:1/v1",
        ANTHROPIC_API_KEY="",
        ANTHROPIC_BASE_URL="http://x",
        DEEPSEEK_API_KEY="",
    )
    assert http(catalog.open("openai:gpt-5.4")).base_url == "http://127.0.0.1:1/v1"
    # A base URL alone is a server that wants no key; an empty key alone is nothing.
    anthropic = http(catalog.open("anthropic:claude-sonnet-5-5"))
    assert (anthropic.base_url, anthropic.api_key) == ("http://x", "")
    assert not any(i.startswith("deepseek:") for i in catalog.infos)


@pytest.mark.parametrize("kind", ["OPENAI", "ANTHROPIC", "DEEPSEEK"])
def test_a_base_url_alone_adds_a_keyless_provider(kind: str) -> None:
    setup = resolve(None, env={f"{kind}_BASE_URL": "http://127.0.0.1:8080/v1"})
    [provider] = setup.providers.values()
    assert (provider.name, provider.base_url) == (kind.lower(), "http://127.0.0.1:8080/v1")
    assert (provider.api_key, provider.key_source) == ("", "none")


def test_file_provider_replaces_env_provider_of_that_name() -> None:
    text = '[providers.openai]\nkind = "openai"\nbase_url = "http://proxy/v1"\napi_key = "f"\n'
    catalog = catalog_of(text, OPENAI_API_KEY="env")
    adapter = http(catalog.open("openai:gpt-5.4"))
    assert (adapter.base_url, adapter.api_key) == ("http://proxy/v1", "f")


def test_file_models_may_extend_env_providers() -> None:
    catalog = catalog_of('[models."openai:o3"]\ncontext_window = 200000\n', OPENAI_API_KEY="o")
    assert catalog.infos["openai:o3"].context_window == 200_000
    assert "openai:gpt-5.4" in catalog


# --- choosing the default model ---------------------------------------------------------------


def test_tether_model_picks_and_may_name_an_unlisted_model() -> None:
    catalog = catalog_of(None, OPENAI_API_KEY="o", TETHER_MODEL="openai:gpt-5.4-mini")
    assert catalog.default == "openai:gpt-5.4-mini" and not catalog.warnings
    catalog = catalog_of(None, OPENAI_API_KEY="o", TETHER_MODEL="openai:gpt-4o")
    assert catalog.default == "openai:gpt-4o"
    info = catalog.infos["openai:gpt-4o"]
    assert (info.context_window, info.max_output_tokens, info.images) == (128_000, 8_192, False)
    assert http(catalog.open("openai:gpt-4o")).model == "gpt-4o"


def test_a_bare_model_name_resolves_when_one_provider_offers_it() -> None:
    catalog = catalog_of(None, OPENAI_API_KEY="o", TETHER_MODEL="gpt-5.4")
    assert catalog.default == "openai:gpt-5.4"
    catalog = catalog_of(None, TETHER_MODEL="demo")
    assert catalog.default == "demo" and not catalog.warnings


def test_with_nothing_chosen_a_configured_provider_is_the_default() -> None:
    assert catalog_of(None, ANTHROPIC_API_KEY="a").default == "anthropic:claude-sonnet-5-5"
    listed = '[providers.local]\nkind = "openai"\nbuiltin_models = false\n'
    listed += '[models."local:qwen"]\n[models."local:llama"]\n'
    only = catalog_of(listed)
    assert (only.default, only.default_source) == (
        "local:qwen",
        "the first model of the only configured provider",
    )
    # the file's providers come before the environment's
    assert catalog_of(listed, OPENAI_API_KEY="o").default == "local:qwen"
    # a provider offering no model is passed over; none at all leaves the demo
    empty = '[providers.bare]\nkind = "openai"\nbuiltin_models = false\n'
    assert catalog_of(empty, DEEPSEEK_API_KEY="d").default == "deepseek:deepseek-flash"
    assert catalog_of(empty).default == "demo"
    # an unusable choice falls back to the provider, with a warning
    fallback = catalog_of(None, OPENAI_API_KEY="o", TETHER_MODEL="nobody:x")
    assert fallback.default == "openai:gpt-5.5" and fallback.warnings


def test_an_unknown_choice_is_a_warning_not_a_failure() -> None:
    catalog = catalog_of(None, TETHER_MODEL="nobody:model")
    assert catalog.default == "demo"
    assert catalog.warnings == [
        "TETHER_MODEL: unknown model 'nobody:model' (no provider named 'nobody': set its API key "
        "variable or add [providers.nobody]); ignored"
    ]


def test_precedence_model_flag_script_env_file(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('{"rounds": []}')
    text = '[providers.p]\nkind = "openai"\n[defaults]\nmodel = "p:gpt-5.4"\n'
    config = parse_config(text)
    env = {"TETHER_MODEL": "p:gpt-5.4-mini"}
    assert build_catalog(config, env={}).default == "p:gpt-5.4"
    assert build_catalog(config, env=env).default == "p:gpt-5.4-mini"
    assert build_catalog(config, env=env, script=str(script)).default == "scripted"
    keyed = {"OPENAI_API_KEY": "o"}  # a provider does not outrank an explicit script
    assert build_catalog(None, env=keyed, script=str(script)).default == "scripted"
    flag = build_catalog(config, env=env, script=str(script), model_override="p:custom")
    assert flag.default == "p:custom" and "scripted" in flag
    # a broken --model falls through to the next choice
    fallback = build_catalog(config, env=env, model_override="zz:top")
    assert fallback.default == "p:gpt-5.4-mini" and fallback.warnings[0].startswith("--model:")


def test_model_flag_on_the_fast_path() -> None:
    assert _fast_acp_args(["acp", "--model", "openai:gpt-5.4"]) == {"model": "openai:gpt-5.4"}


# --- a broken file does not stop the agent ----------------------------------------------------


def test_a_bad_key_is_left_out_alone_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[providers.a]\nkind = 'openai'\nbogus = 1\n")
    env = {"TETHER_CONFIG": str(path), "OPENAI_API_KEY": "o", "TETHER_MODEL": "openai:gpt-5.4"}
    with caplog.at_level(logging.WARNING, logger="tether.config"):
        catalog = load_catalog(env=env)
    assert catalog.default == "openai:gpt-5.4" and "a:gpt-5.4" in catalog  # the rest applies
    expected = f"{path}:3: providers.a.bogus: unknown key"
    assert expected in catalog.warnings[0]
    assert expected in caplog.text


# --- tether config path / init ----------------------------------------------------------------


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run(
        [sys.executable, "-m", "tether", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=REPO,
        timeout=60,
    )


@pytest.mark.slow
def test_config_init_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "config.toml"
    env = {"TETHER_CONFIG": str(path)}
    shown = run_cli("config", "path", env=env)
    assert shown.returncode == 0 and shown.stdout.strip() == str(path)
    made = run_cli("config", "init", env=env)
    assert made.returncode == 0 and str(path) in made.stdout
    assert path.read_text() == example_config()
    config = load_config(path)
    assert config is not None

    path.write_text("# mine\n")
    refused = run_cli("config", "init", env=env)
    assert refused.returncode == 1 and "--force" in refused.stderr
    assert path.read_text() == "# mine\n"
    forced = run_cli("config", "init", "--force", env=env)
    assert forced.returncode == 0 and path.read_text() == example_config()


def test_every_example_in_the_example_config_is_valid() -> None:
    # Example lines are commented out as "#key = ..."; prose comments are "# ...".
    uncommented = re.sub(r"(?m)^#(?=[^\s#])", "", example_config())
    assert uncommented != example_config()
    catalog = build_catalog(parse_config(uncommented), env={})
    assert catalog.default == "claude:claude-sonnet-5-5"
    assert catalog.infos["openai:gpt-5.5"].default_reasoning == "low"
    assert list(i for i in catalog.infos if i.startswith("local:")) == ["local:qwen2.5-coder:32b"]


def test_the_documented_example_is_valid() -> None:
    doc = (REPO / "docs" / "configuration.md").read_text()
    block = doc.split("### The config file", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    catalog = build_catalog(parse_config(block), env={})
    assert catalog.default == "work:claude-sonnet-5-5"
    assert catalog.infos["local:qwen2.5-coder:32b"].default_reasoning == "medium"


# --- end to end: tether acp on an env provider ------------------------------------------------


@pytest.mark.slow
@pytest.mark.anyio
async def test_acp_serves_an_env_provider_end_to_end(home: Path, project: Path) -> None:
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["Hello", " there"])))
        env = {
            "OPENAI_API_KEY": "sk-e2e",
            "OPENAI_BASE_URL": server.url + "/v1",
            "TETHER_MODEL": "openai:gpt-5.4",
        }
        async with spawn_agent(home, env=env) as agent:
            await agent.initialize()
            resp = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
            result = resp["result"]
            model = next(o for o in result["configOptions"] if o["id"] == "model")
            assert model["currentValue"] == "openai:gpt-5.4"
            values = [o["value"] for o in model["options"]]
            assert {"demo", "openai:gpt-5.4", "openai:gpt-5.4-mini"} <= set(values)

            done = await agent.prompt(result["sessionId"], "Say hello")
            assert done["result"]["stopReason"] == "end_turn"
            text = "".join(
                u["content"]["text"]
                for u in agent.updates(result["sessionId"])
                if u["sessionUpdate"] == "agent_message_chunk"
            )
            assert text == "Hello there"
        sent = server.posts[0]
        assert sent.headers["authorization"] == "Bearer sk-e2e"
        assert sent.json()["model"] == "gpt-5.4"


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_local_server_by_base_url_alone(home: Path, project: Path) -> None:
    """OPENAI_BASE_URL and nothing else (Ollama, llama.cpp, vLLM): sessions start on that
    provider, and its requests carry no Authorization header."""
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["Hi", " local"])))
        async with spawn_agent(home, env={"OPENAI_BASE_URL": server.url + "/v1"}) as agent:
            await agent.initialize()
            resp = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
            model = next(o for o in resp["result"]["configOptions"] if o["id"] == "model")
            assert model["currentValue"] == "openai:gpt-5.5"
            done = await agent.prompt(resp["result"]["sessionId"], "Say hi")
            assert done["result"]["stopReason"] == "end_turn"
        [sent] = server.posts
        assert "authorization" not in sent.headers
        assert sent.json()["model"] == "gpt-5.5"


def test_httpx_is_the_client() -> None:
    # The shared client is an httpx.AsyncClient made with the provider's timeout.
    catalog = catalog_of('[providers.p]\nkind = "openai"\ntimeout = 42\n')
    client = http(catalog.open("p:gpt-5.4"))._get_client()
    assert isinstance(client, httpx.AsyncClient) and client.timeout.read == 42.0


@pytest.mark.slow
@pytest.mark.anyio
async def test_acp_serves_despite_a_broken_config_file(
    home: Path, project: Path, tmp_path: Path
) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("[providers.a\n")
    async with spawn_agent(home, "--model", "demo", env={"TETHER_CONFIG": str(path)}) as agent:
        await agent.initialize()
        resp = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
        model = next(o for o in resp["result"]["configOptions"] if o["id"] == "model")
        assert model["currentValue"] == "demo"
