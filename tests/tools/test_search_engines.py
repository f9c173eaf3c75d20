"""The search tools on both engines (ripgrep, the single-pass Python fallback): the same rules
(denylist, .gitignore, binaries), the same results on one tree, a pattern ripgrep's dialect
cannot run, a big tree within the budget."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.toolctx import make_ctx, text
from tether.engine.local import ripgrep
from tether.engine.local.local_search import LocalSearch
from tether.engine.local.rust_regex import rust_pattern
from tether.engine.registry import ToolDef
from tether.engine.seam import Capabilities
from tether.engine.workspace import Workspace
from tether.errors import ToolError
from tether.tools import search
from tether.tools.globs import name_hint
from tether.tools.search import glob_paths, regex_files, tree

pytestmark = pytest.mark.anyio

ENGINES = ["ripgrep", "python"]


def _ctx(root: Path, tmp_path: Path, engine: str, **kw: Any) -> Capabilities:
    if engine == "ripgrep":
        assert ripgrep.find_rg() is not None, "the ripgrep wheel is a dependency"
    return make_ctx(root, tmp_path / "spill", search=LocalSearch(use_rg=engine == "ripgrep"), **kw)


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            (root / rel).write_bytes(body)
        else:
            (root / rel).write_text(body)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
async def test_denylisted_files_never_appear(project: Path, tmp_path: Path, engine: str) -> None:
    secret = "SECRET_TOKEN"
    _write(
        project,
        {
            "a/b/c/.env.local": secret,
            "deep/er/keys/id_rsa": secret,
            "deep/er/server.PEM": secret,
            "x/.ssh/config": secret,
            ".aws/credentials": secret,
            "geheim-u\u0308.txt": secret,  # NFD: the denylist entry is written NFC
            "fine.txt": "nothing here\n",
        },
    )
    (project / "innocent").symlink_to(project / "x" / ".ssh")  # a link into a denied dir
    (project / "innocent.txt").symlink_to(project / "a" / "b" / "c" / ".env.local")
    deny = ["geheim-\u00fc*", ".env*", "id_rsa*", "*.pem", ".ssh", ".aws"]
    ctx = _ctx(project, tmp_path, engine, workspace=Workspace([project], denylist=deny))
    grep = await text(ctx, regex_files, pattern="SECRET")
    assert secret not in grep and grep.startswith("no matches for /SECRET/")
    listed = await text(ctx, glob_paths, pattern="**/*")
    shown = await text(ctx, tree, format="flat")
    for out in (listed, shown):
        for name in (".env.local", "id_rsa", "server.PEM", "config", "credentials", "geheim"):
            assert name not in out, (name, out)
    assert "fine.txt" in listed and "fine.txt" in shown
    assert "innocent" in shown  # a symlink is listed, never followed


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
async def test_gitignore_from_the_root_applies_below_it_and_none_from_above(
    project: Path, tmp_path: Path, engine: str
) -> None:
    _write(
        project,
        {
            ".gitignore": "*.log\n/src/gen/\n!keep.log\n",
            "src/a.py": "hit\n",
            "src/b.log": "hit\n",
            "src/keep.log": "hit\n",
            "src/gen/c.py": "hit\n",
            "src/sub/.gitignore": "d.py\n",
            "src/sub/d.py": "hit\n",
            "src/sub/e.py": "hit\n",
        },
    )
    (project.parent / ".gitignore").write_text("*.py\n")  # above the root: not read
    ctx = _ctx(project, tmp_path, engine)
    for path in (".", "src"):
        got = await text(ctx, regex_files, pattern="hit", path=path)
        assert [line.split(":")[0] for line in got.splitlines()[:-1]] == [
            "src/a.py",
            "src/keep.log",
            "src/sub/e.py",
        ], (path, got)
    files = await text(ctx, glob_paths, pattern="**/*.{py,log}", path="src")
    assert files.splitlines()[1:] == ["a.py", "keep.log", "sub/e.py"]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
async def test_binary_files_are_skipped(project: Path, tmp_path: Path, engine: str) -> None:
    _write(project, {"blob.bin": b"\x7fELF\0\0hit\n", "text.txt": "hit\n"})
    got = await text(_ctx(project, tmp_path, engine), regex_files, pattern="hit")
    assert got.splitlines()[0] == "text.txt:1: hit" and "blob.bin" not in got


FIXTURE: dict[str, str | bytes] = {
    ".gitignore": "build/\n*.tmp\n",
    "README.md": "# title\nfoo = 1\n",
    "src/app.py": "import os\nfoo = bar(1)\n\ndef Foo():\n    return 'FOO'\n",
    "src/util/helpers.py": "def helper():\n    return foo  # foo\n",
    "src/util/Zed.py": "foo\n" * 5,
    "src/util/data.bin": b"foo\0foo",
    "src/deep/er/still/x.ts": "let foo: number = 1;\nfoofoo\n",
    "docs/guide.md": "Foo\nfoo\nbar\n",
    "build/out.py": "foo\n",
    "scratch.tmp": "foo\n",
    "node_modules/p/index.js": "foo\n",
    "unicode.txt": "größe foo naïve\nδ foo\n",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (regex_files, {"pattern": "foo"}),
        (regex_files, {"pattern": r"(?i)\bfoo\b"}),
        (regex_files, {"pattern": r"^\s+return"}),
        (regex_files, {"pattern": "foo", "glob": "*.py"}),
        (regex_files, {"pattern": "foo", "glob": "src/**/*.{py,ts}"}),
        (regex_files, {"pattern": r"gr\w+e"}),
        (regex_files, {"pattern": r"foo\Z"}),
        (glob_paths, {"pattern": "**/*.py"}),
        (glob_paths, {"pattern": "src/*"}),
        (glob_paths, {"pattern": "**"}),
        (glob_paths, {"pattern": "*.md"}),
    ],
)
async def test_both_engines_give_the_same_results(
    project: Path, tmp_path: Path, tool: ToolDef, args: dict[str, object]
) -> None:
    _write(project, FIXTURE)
    outs: dict[str, list[str]] = {}
    for engine in ENGINES:
        got = await text(_ctx(project, tmp_path, engine), tool, **args)
        # The summary counts what each engine counts (ripgrep: binaries among files searched).
        outs[engine] = [line for line in got.splitlines() if "files searched" not in line]
    assert outs["ripgrep"] == outs["python"]
    assert outs["python"]  # not empty: the pattern finds something


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_capped_search_shows_the_limit_from_the_full_answer(
    project: Path, tmp_path: Path, engine: str
) -> None:
    """At the limit the search is over: the Python engine's walk has found the nearest lines,
    ripgrep (stopped there, as `rg | head` is) the first it found, on any of its threads; both
    show that many lines of the whole answer, nearest first, and say they stopped."""
    _write(project, FIXTURE)
    ctx = _ctx(project, tmp_path, engine)
    full = (await text(ctx, regex_files, pattern="foo")).splitlines()
    got = (await text(ctx, regex_files, pattern="foo", max_results=3)).splitlines()
    assert got[3].startswith("3 matching lines in ")
    assert got[-1].startswith("[… stopped at 3 matches;")
    assert set(got[:3]) <= set(full[:-1])
    if engine == "python":
        assert got[:3] == full[:3]
    else:
        assert got[:3] == [line for line in full if line in got[:3]]  # in the full answer's order


@pytest.mark.slow
async def test_a_look_around_pattern_runs_on_the_python_engine(
    project: Path, tmp_path: Path
) -> None:
    _write(project, {"a.py": "foo_bar\nfoo_baz\n", "b.py": "x = foo\n"})
    ctx = _ctx(project, tmp_path, "ripgrep")
    got = await text(ctx, regex_files, pattern=r"foo(?=_ba[rz])(?!_baz)")
    assert got.splitlines() == [
        "a.py:1: foo_bar",
        "1 matching lines in 1 files (3 files searched)",
        "[searched with Python's regex engine: the pattern uses look-around]",
    ]
    back = await text(ctx, regex_files, pattern=r"(o)\1")
    assert back.splitlines()[-1] == (
        "[searched with Python's regex engine: the pattern uses a backreference]"
    )
    plain = await text(ctx, regex_files, pattern=r"foo_ba[rz]")
    assert "Python's regex engine" not in plain


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
async def test_a_big_tree_is_searched_within_the_budget(
    project: Path, tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3,000 files with a 3 s budget: what is charged is matching, not the walk's hand-offs."""
    monkeypatch.setattr(search, "MATCH_BUDGET", 3.0)
    for d in range(30):
        folder = project / f"pkg{d:02}" / "mod"
        folder.mkdir(parents=True)
        for f in range(100):
            body = f"def f{f}():\n    return {f}\n" + ("needle_here\n" if f == 7 else "")
            (folder / f"m{f:03}.py").write_text(body)
    ctx = _ctx(project, tmp_path, engine)
    got = await text(ctx, regex_files, pattern=r"needle_\w+")
    lines = got.splitlines()
    assert lines[0] == "pkg00/mod/m007.py:3: needle_here"
    assert lines[-1].startswith("30 matching lines in 30 files (3001 files searched")
    assert (await text(ctx, glob_paths, pattern="**/m007.py")).startswith("30 paths under .")


def test_tether_rg_0_forces_the_python_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    ripgrep.find_rg.cache_clear()
    try:
        monkeypatch.setenv("TETHER_RG", "0")
        assert ripgrep.find_rg() is None
        assert LocalSearch().engine.startswith("python")
        ripgrep.find_rg.cache_clear()
        monkeypatch.delenv("TETHER_RG")
        found = ripgrep.find_rg()
        assert found is not None and os.access(found, os.X_OK)
        assert LocalSearch().engine.startswith("ripgrep 14.")
    finally:
        ripgrep.find_rg.cache_clear()


@pytest.mark.slow
async def test_ripgrep_is_stopped_when_its_budget_is_spent(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "MATCH_BUDGET", 0.0)  # no time at all: stopped at once
    _write(project, {f"d{i}/f.txt": "hit\n" for i in range(50)})
    with pytest.raises(ToolError) as e:
        await text(_ctx(project, tmp_path, "ripgrep"), regex_files, pattern="hit")
    assert e.value.code == "TOOL_TIMEOUT"
    assert e.value.message.startswith(
        "regex /hit/ is too slow: it used up the 0 s one search may spend matching "
        "(search stopped). Simplify it:"
    )


@pytest.mark.parametrize(
    ("pattern", "rust", "why"),
    [
        (r"foo\Z", r"foo\z", ""),
        ("a{e}[[:x]]", r"a\{e}[\[:x]]", ""),
        ("--verbose", "--verbose", ""),
        ("(?<=a)b", None, "look-around"),
        (r"(a)\1", None, "a backreference"),
        ("(?>a)", None, "an atomic group"),
        ("a++", None, "a possessive quantifier"),
        ("(?x) a", None, "verbose, ASCII or locale mode"),
        ("(?a)\\w", None, "verbose, ASCII or locale mode"),
        ("[a&&b]", None, "`&&` in a set"),
        ("(?#note)a", None, "a comment"),
    ],
)
def test_the_pattern_in_ripgrep_s_dialect(pattern: str, rust: str | None, why: str) -> None:
    assert rust_pattern(pattern) == (rust, why)


@pytest.mark.parametrize(
    ("glob", "hint"),
    [
        ("**/*.py", "*.py"),
        ("src/**/test_*.{ts,tsx}", "test_*.{ts,tsx}"),
        ("a**b.txt", "a*b.txt"),
        ("src/*", None),  # narrows nothing
        ("**", None),
        ("*.[ch]", None),  # a set: left to the exact match
        ("{a,{b,c}}.py", None),  # nested braces
        ("x{.py", None),  # a literal `{` for tether's globs
    ],
)
def test_the_name_hint_an_engine_narrows_with(glob: str, hint: str | None) -> None:
    assert name_hint(glob) == hint


@pytest.mark.slow
async def test_an_rg_that_cannot_start_leaves_the_search_to_python(
    project: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "rg"
    broken.write_bytes(b"\x7fELF not really")
    broken.chmod(0o755)
    _write(project, {"a.txt": "hit\n"})
    engine = LocalSearch(broken)
    ctx = make_ctx(project, tmp_path / "spill", search=engine)
    got = await text(ctx, regex_files, pattern="hit")
    assert got.splitlines()[0] == "a.txt:1: hit"
    assert got.splitlines()[-1].startswith(
        "[searched with Python's regex engine: ripgrep did not start ("
    )
    assert engine.rg is None and engine.engine.startswith("python")
    assert (await text(ctx, glob_paths, pattern="*.txt")).splitlines()[1:] == ["a.txt"]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
async def test_denylist_patterns_ripgrep_would_read_otherwise(
    project: Path, tmp_path: Path, engine: str
) -> None:
    """fnmatch takes `{`, `}` and `\\` literally and `**` as `*`; ripgrep's globs do not."""
    _write(project, {"a/sec-x-ret.txt": "hit\n", "a/{b}.txt": "hit\n", "a/ok.txt": "hit\n"})
    deny = ["sec**ret*", "{b}*"]
    ctx = _ctx(project, tmp_path, engine, workspace=Workspace([project], denylist=deny))
    got = await text(ctx, regex_files, pattern="hit")
    assert got.splitlines()[:-1] == ["a/ok.txt:1: hit"]
    assert (await text(ctx, glob_paths, pattern="**/*.txt")).splitlines()[1:] == ["a/ok.txt"]
