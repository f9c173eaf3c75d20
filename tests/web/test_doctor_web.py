"""`tether doctor` shows the web settings: the tools offered, the search providers in the order
they are asked, the fetch provider, and whether each can work, in text and JSON, without sending
anything to them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_doctor import doctor, line_matching
from tests.support.web_servers import PageServer
from tether.engine.web.build import SEARCH_HINT

pytestmark = pytest.mark.slow


def test_configured_providers_in_order_with_what_each_needs(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    with PageServer() as searx:
        path.write_text(
            '[web]\nsearch_providers = ["deepseek", "searxng"]\nfetch_local = false\n'
            f'[web.searxng]\nurl = "{searx.url("/")}"\n'
        )
        done = doctor(env={"TETHER_CONFIG": str(path)})
        assert searx.requests == []  # nothing is sent to find out
    out = done.stdout
    assert done.returncode == 0, out  # a provider that cannot work is a warning
    first = line_matching(r"^\s+search\s+1\. deepseek", out)
    assert first.split()[-5:] == ["unavailable", "DEEPSEEK_API_KEY", "is", "not", "set"]
    second = line_matching(r"^\s+search\s+2\. searxng", out)
    assert second.split()[-2:] == ["ok", f"{searx.url('/search')}"]
    assert line_matching(r"^\s+fetch\s+local\s", out).split()[-4:] == ["ok", "from", "this", "host"]
    assert "  tools: web_search, web_fetch\n" in out
    assert "  search order: [web] search_providers\n" in out
    assert "  web search provider deepseek: DEEPSEEK_API_KEY is not set\n" in out


def test_json_report(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[web]\nsearch = false\nfetch_provider = "deepseek"\n')
    done = doctor("--json", env={"TETHER_CONFIG": str(path), "DEEPSEEK_API_KEY": "sk-d"})
    web = json.loads(done.stdout)["web"]
    assert web == {
        "tools": ["web_fetch", "fetch_local"],
        "search": None,
        "fetch": [{"name": "deepseek", "usable": True, "detail": "https://api.deepseek.com"}],
        "search_order": "environment",
        "search_hint": "",
    }
    assert "sk-d" not in done.stdout


def test_from_the_environment_and_with_nothing(tmp_path: Path) -> None:
    env = {"TETHER_CONFIG": str(tmp_path / "none.toml")}
    nothing = doctor("--json", env=env)
    web = json.loads(nothing.stdout)["web"]
    assert (web["search"], web["search_hint"]) == ([], SEARCH_HINT)
    assert f"  search  -      none  {SEARCH_HINT}\n" in doctor(env=env).stdout
    with PageServer() as searx:
        found = doctor("--json", env={**env, "TETHER_SEARXNG_URL": searx.url("/")})
    web = json.loads(found.stdout)["web"]
    assert web["search"] == [{"name": "searxng", "usable": True, "detail": searx.url("/search")}]
    assert web["search_order"] == "environment"


def test_a_broken_web_table_names_key_and_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[web]\n\nsearch_providers = ["google"]\n')
    done = doctor(env={"TETHER_CONFIG": str(path)})
    assert done.returncode == 1
    assert f"  error: {path}:3: web.search_providers: invalid value 'google'" in done.stdout
