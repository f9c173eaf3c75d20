"""The config file's `[web]` table: read with the same line-numbered validation as the rest,
merged with the environment when `ctx.web` is built, and served by `tether acp` (the tools it
enables, their guidance in the system prompt, the providers it names)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import REPO, spawn_agent
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import chat_chunk, chat_end, chat_text
from tests.support.web_servers import Page, PageServer
from tether.engine.config.file import parse_config
from tether.engine.config.resolve import load_setup, resolve
from tether.engine.system_prompt import TOOL_RULES
from tether.engine.web.build import build_web
from tether.errors import ConfigError, WebError
from tether.schemas.web import WebConfig
from tether.tools.web_guidance import WEB_FETCH_GUIDANCE, WEB_SEARCH_GUIDANCE

FULL = """\
[web]
search = true
fetch = true
fetch_local = false
search_max_results = 5
search_timeout_ms = 20000
fetch_timeout_ms = 15000
search_providers = ["deepseek", "searxng", "bing"]
fetch_provider = "deepseek"

[web.searxng]
url = "http://localhost:8888"
headers = { "X-Team" = "tools" }

[web.deepseek]
api_key_env = "WEB_DS_KEY"
base_url = "https://api.deepseek.com"

[web.bing]
url = "https://www.bing.com/search"

[web.local]
max_url_length = 4096
max_response_bytes = 1000000
max_body_chars = 50000
timeout_ms = 10000
max_redirects = 0
user_agent = "tether-test"
"""


def web_of(text: str, **env: str) -> WebConfig:
    return resolve(parse_config(text), env=env).web


def errors_of(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, Path("/cfg/config.toml"))
    return str(caught.value).splitlines()


def searx_page(*urls: str) -> Page:
    results = [{"url": u, "title": f"T{i}", "content": "snippet"} for i, u in enumerate(urls)]
    return Page(json.dumps({"results": results}).encode(), type="application/json")


# --- reading the table ------------------------------------------------------------------------


def test_every_key_of_the_table_is_read() -> None:
    web = web_of(FULL)
    assert (web.search, web.fetch, web.fetch_local) == (True, True, False)
    assert (web.search_max_results, web.search_timeout_ms, web.fetch_timeout_ms) == (
        5,
        20000,
        15000,
    )
    assert web.search_providers == ["deepseek", "searxng", "bing"]
    assert web.fetch_provider == "deepseek"
    assert (web.searxng.url, web.searxng.headers) == ("http://localhost:8888", {"X-Team": "tools"})
    assert (web.deepseek.api_key_env, web.deepseek.base_url) == (
        "WEB_DS_KEY",
        "https://api.deepseek.com",
    )
    assert web.bing.url == "https://www.bing.com/search"
    local = web.local
    assert (local.max_url_length, local.max_response_bytes, local.max_body_chars) == (
        4096,
        1_000_000,
        50_000,
    )
    assert (local.timeout_ms, local.max_redirects, local.user_agent) == (10000, 0, "tether-test")


def test_no_table_is_the_defaults() -> None:
    assert web_of("") == WebConfig()
    assert web_of("[web]\n") == WebConfig()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[web]\nserch = true\n", ":2: web.serch: unknown key (expected one of: search, fetch,"),
        ("\n[web.local]\nmax_body = 5\n", ":3: web.local.max_body: unknown key (expected one of:"),
        ("[web]\nsearch = 'yes'\n", ":2: web.search: expected true or false, got a string"),
        (
            '[web]\nsearch_providers = ["searxng", "google"]\n',
            ":2: web.search_providers: invalid value 'google' (expected one of: searxng, "
            "deepseek, exa, perplexity, bing)",
        ),
        (
            '[web]\n\nfetch_provider = "curl"\n',
            ":3: web.fetch_provider: invalid value 'curl' (expected one of: local, deepseek, none)",
        ),
        (
            '[web]\nsearch_providers = ["bing", "bing"]\n',
            ":2: web.search_providers: lists a provider twice",
        ),
        ("[web]\nsearch_max_results = 0\n", ":2: web.search_max_results: must be >= 1"),
        ("[web]\nsearch_max_results = 51\n", ":2: web.search_max_results: must be <= 50"),
        ("[web]\nfetch_timeout_ms = 0\n", ":2: web.fetch_timeout_ms: must be >= 1"),
        (
            "[web.local]\n\nmax_redirects = -1\n",
            ":3: web.local.max_redirects: must be a non-negative integer, not -1",
        ),
        (
            "[web.local]\ntimeout_ms = 0\n",
            ":2: web.local.timeout_ms: must be a positive finite number, not 0",
        ),
        ("[web.local]\nuser_agent = ' '\n", ":2: web.local.user_agent: must not be empty"),
        ("[web]\nlocal = 5\n", ":2: web.local: expected a table, got an integer"),
        ("web = 1\n", ":1: web: expected a table"),
        (
            "[web.searxng]\nurl = 'localhost:8888'\n",
            ":2: web.searxng.url: expected an http:// or https:// URL",
        ),
        (
            "[web.bing]\nurl = 'bing.com'\n",
            ":2: web.bing.url: expected an http:// or https:// URL",
        ),
        (
            "[web.deepseek]\napi_key = 'k'\napi_key_env = 'K'\n",
            ":3: web.deepseek.api_key_env: set api_key or api_key_env, not both",
        ),
        # other ways to write the table: inline and dotted keys
        ("a = 1\n[web]\nlocal = { max_redirects = 'x' }\n", ":3: web.local.max_redirects"),
        ('\n\nweb.searxng.uri = "http://x"\n', ":3: web.searxng.uri: unknown key"),
    ],
)
def test_errors_name_key_and_line(text: str, expected: str) -> None:
    lines = errors_of(text)
    assert any(line.startswith("/cfg/config.toml" + expected) for line in lines), lines


def test_every_problem_is_reported_in_line_order() -> None:
    text = (
        '[providers.a]\nkind = "opneai"\n'
        '[web]\nsearch_providers = ["google"]\nfetch_provider = "curl"\n'
        "[web.local]\nmax_redirects = -1\ncolour = 1\n"
    )
    lines = errors_of(text)
    assert [re.sub(r":\s.*", "", line) for line in lines] == [
        f"/cfg/config.toml:{n}" for n in (2, 4, 5, 8)
    ], lines
    # a sub-table with an unknown key is not built, so its cross-field checks (max_redirects)
    # are reported once the key is fixed
    assert "web.local.colour: unknown key" in lines[-1]


def test_a_key_pasted_into_api_key_env_is_not_echoed() -> None:
    lines = errors_of("[web.deepseek]\napi_key_env = 'sk-secret-123'\n")
    assert "expected the name of an environment variable" in lines[0]
    assert "sk-secret" not in "\n".join(lines)


def test_a_bad_web_key_is_left_out_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[providers.a]\nkind = "openai"\n\n[web]\nfetch_provider = "curl"\n')
    setup = load_setup({"TETHER_CONFIG": str(path), "TETHER_SEARXNG_URL": "http://s"})
    assert setup.web == WebConfig() and "a" in setup.providers
    assert f"{path}:5: web.fetch_provider: invalid value 'curl'" in setup.warnings[0]


def test_the_documented_web_example_is_valid() -> None:
    doc = (REPO / "docs" / "configuration.md").read_text()
    section = doc.split("### The `[web]` table", 1)[1]
    block = section.split("```toml\n", 1)[1].split("```", 1)[0]
    web = web_of(block)
    assert web.search_providers == ["searxng", "deepseek"] and web.fetch_provider == "local"


# --- merged with the environment --------------------------------------------------------------


@pytest.mark.anyio
async def test_the_environment_fills_what_the_table_leaves_out() -> None:
    with PageServer() as env_searx:
        env_searx.route("/search", searx_page("https://a.example/"))
        web = web_of('[web]\nsearch_providers = ["searxng"]\nsearch_max_results = 1\n')
        found = await build_web(web, {"TETHER_SEARXNG_URL": env_searx.url("/")}).search(
            "q", max_results=web.search_max_results
        )
    assert found.provider == "searxng" and [h.url for h in found.hits] == ["https://a.example/"]
    assert env_searx.requests[0].query["q"] == ["q"]


@pytest.mark.anyio
async def test_the_table_wins_over_the_environment() -> None:
    with PageServer() as env_searx, PageServer() as file_searx:
        file_searx.route("/search", searx_page("https://file.example/"))
        env = {"TETHER_SEARXNG_URL": env_searx.url("/")}
        web = web_of(f'[web.searxng]\nurl = "{file_searx.url("/")}"\n', **env)
        found = await build_web(web, env).search("q", max_results=8)
        assert [h.url for h in found.hits] == ["https://file.example/"]
        assert env_searx.requests == [] and len(file_searx.requests) == 1


@pytest.mark.anyio
async def test_deepseek_reads_the_variable_the_table_names() -> None:
    with PageServer() as site:
        reply = {"results": [{"title": "T", "url": "https://d.example/", "snippet": "s"}]}
        site.route("/v1/tools/search", Page(json.dumps(reply).encode(), type="application/json"))
        text = (
            '[web]\nsearch_providers = ["deepseek"]\n'
            f'[web.deepseek]\napi_key_env = "WEB_DS_KEY"\nbase_url = "{site.url("/")}"\n'
        )
        env = {"WEB_DS_KEY": "sk-web", "DEEPSEEK_API_KEY": "sk-chat"}
        found = await build_web(web_of(text), env).search("q", max_results=8)
        assert found.provider == "deepseek"
        assert site.requests[0].headers["authorization"] == "Bearer sk-web"
        with pytest.raises(WebError) as missing:
            await build_web(web_of(text), {"DEEPSEEK_API_KEY": "sk-chat"}).search(
                "q", max_results=8
            )
    assert missing.value.code == "WEB_PROVIDER_CONFIGURED_MISSING"
    assert "WEB_DS_KEY is not set" in missing.value.message


@pytest.mark.anyio
async def test_an_empty_provider_list_turns_the_environment_off() -> None:
    web = web_of("[web]\nsearch_providers = []\n")
    with pytest.raises(WebError) as info:
        await build_web(web, {"TETHER_SEARXNG_URL": "http://127.0.0.1:9/"}).search(
            "q", max_results=8
        )
    assert info.value.code == "WEB_PROVIDER_UNAVAILABLE"


# --- served by tether acp ---------------------------------------------------------------------


def web_search_call(query: str) -> list[bytes | float]:
    call = {
        "index": 0,
        "id": "s1",
        "type": "function",
        "function": {"name": "web_search", "arguments": json.dumps({"query": query})},
    }
    return [
        chat_chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
        *chat_end("tool_calls"),
    ]


def tool_result(body: dict[str, Any], call_id: str) -> str:
    [message] = [m for m in body["messages"] if m.get("tool_call_id") == call_id]
    return message["content"]


@pytest.mark.slow
@pytest.mark.anyio
async def test_tether_acp_serves_the_web_table(home: Path, project: Path, tmp_path: Path) -> None:
    """The file's `[web]` table decides the tools offered, their guidance in the system prompt
    (after the tool rules, before the mode), the search provider asked and the result count."""
    with PageServer() as searx, MockLLMServer() as llm:
        searx.route(
            "/search", searx_page("https://a.example/", "https://b.example/", "https://c.example/")
        )
        llm.script(
            "/v1/chat/completions",
            Reply(chunks=web_search_call("tether")),
            Reply(chunks=chat_text(["Found it."])),
        )
        config = tmp_path / "config.toml"
        config.write_text(
            f'[providers.p]\nkind = "openai"\nbase_url = "{llm.url}/v1"\napi_key = "k"\n'
            'builtin_models = false\n[models."p:m"]\n[defaults]\nmodel = "p:m"\n\n'
            "[web]\nfetch = false\nfetch_local = false\nsearch_max_results = 2\n"
            f'search_providers = ["searxng"]\n[web.searxng]\nurl = "{searx.url("/")}"\n'
        )
        # The environment's instance is not asked: the table names another.
        env = {"TETHER_CONFIG": str(config), "TETHER_SEARXNG_URL": "http://127.0.0.1:9/"}
        async with spawn_agent(home, env=env) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            done = await agent.prompt(sid, "Search for tether")
            assert done["result"] == {"stopReason": "end_turn"}
        first, second = (r.json() for r in llm.posts)
    offered = {t["function"]["name"] for t in first["tools"]}
    assert "web_search" in offered and not offered & {"web_fetch", "fetch_local"}
    system = first["messages"][0]["content"]
    assert f"{TOOL_RULES}\n\n# Web\n{WEB_SEARCH_GUIDANCE}\n\n# Mode" in system
    assert WEB_FETCH_GUIDANCE not in system  # web_fetch is off: its guidance too
    assert second["messages"][0]["content"] == system  # the prefix stays put
    result = tool_result(second, "s1")
    assert "https://a.example/" in result and "https://b.example/" in result
    assert "https://c.example/" not in result and "Showing the first 2 sources" in result
    assert [r.query["q"] for r in searx.requests] == [["tether"]]
