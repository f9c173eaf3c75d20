"""tree, glob_paths, regex_files and the vcs tools against real directories and a real git
repository; the search tools on both engines (ripgrep, the Python fallback)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.toolctx import make_ctx, plan, run, text
from tether.engine.local.local_search import LocalSearch
from tether.engine.local.ripgrep import find_rg
from tether.engine.seam import Capabilities
from tether.errors import ToolError
from tether.tools import search
from tether.tools.search import glob_paths, regex_files, tree
from tether.tools.vcs import vcs_branch, vcs_diff, vcs_kind, vcs_log, vcs_status

pytestmark = pytest.mark.anyio


ENGINES = ["ripgrep", "python"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


def searcher(engine: str) -> LocalSearch:
    if engine == "ripgrep":
        assert find_rg() is not None, "the ripgrep wheel is a dependency: its rg is installed"
    return LocalSearch(use_rg=engine == "ripgrep")


@pytest.fixture
def ctx(project: Path, tmp_path: Path, engine: str) -> Capabilities:
    return make_ctx(project, tmp_path / "spill", search=searcher(engine))


@pytest.fixture
def layout(project: Path) -> Path:
    for rel, body in {
        "src/app.py": "import os\nTODO = 1\n",
        "src/util/helpers.py": "def helper():\n    return 'todo later'\n",
        "src/util/data.bin": "abc\0TODO",
        "docs/guide.md": "# Guide\nTODO: write\n",
        "build/out.py": "TODO generated\n",
        "node_modules/pkg/index.js": "TODO in a dependency\n",
        ".git/config": "[core]\n",
        ".env": "SECRET=TODO\n",
        "notes.log": "TODO in a log\n",
        ".gitignore": "build/\n*.log\n",
    }.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(body)
    return project


async def test_tree_formats_and_skips(ctx: Capabilities, layout: Path) -> None:
    got = await text(ctx, tree)
    assert got == "\n".join(
        [
            "./",
            "- docs/",
            "  - guide.md",
            "- src/",
            "  - util/",
            "    - data.bin",
            "    - helpers.py",
            "  - app.py",
            "- .gitignore",
            "- README.md",
            "(3 directories, 6 files) [5 skipped (VCS, noise dirs, .gitignore, denylist)]",
        ]
    )
    flat = await text(ctx, tree, path="src", format="flat")
    assert flat.splitlines()[1:4] == ["util/", "util/data.bin", "util/helpers.py"]
    decorated = await text(ctx, tree, path="src", format="decorated")
    assert decorated.splitlines()[1:5] == [
        "├── util/",
        "│   ├── data.bin",
        "│   └── helpers.py",
        "└── app.py",
    ]
    shallow = await text(ctx, tree, max_depth=1)
    assert "  - guide.md" not in shallow and "- docs/" in shallow
    with pytest.raises(ToolError, match="max_depth must be 1 or more"):
        await run(ctx, tree, max_depth=0)
    p = await plan(ctx, tree, path="src")
    assert (p.title, p.kind, p.confirm) == ("Tree of src", "search", False)


async def test_tree_is_bounded(
    ctx: Capabilities, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "TREE_MAX_ENTRIES", 5)
    for i in range(8):
        (project / f"f{i}.txt").write_text("")
    got = await text(ctx, tree, format="flat")
    assert got.splitlines()[-1] == "[… truncated at 5 entries; narrow with path or max_depth]"
    assert len(got.splitlines()) == 1 + 5 + 2


@pytest.mark.slow
async def test_nested_gitignore_and_negation(ctx: Capabilities, project: Path) -> None:
    (project / "a").mkdir()
    (project / "a" / ".gitignore").write_text("*.tmp\n!keep.tmp\n")
    for name in ("x.tmp", "keep.tmp", "y.txt"):
        (project / "a" / name).write_text("")
    (project / "b.tmp").write_text("")  # the nested file does not apply above its directory
    got = await text(ctx, glob_paths, pattern="**/*.tmp")
    assert got.splitlines()[1:] == ["a/keep.tmp", "b.tmp"]


@pytest.mark.slow
async def test_glob_paths(ctx: Capabilities, layout: Path) -> None:
    got = await text(ctx, glob_paths, pattern="**/*.py")
    assert got.splitlines() == [
        "2 paths under . match **/*.py",
        "src/app.py",
        "src/util/helpers.py",
    ]
    top = await text(ctx, glob_paths, pattern="*.md")
    assert top.splitlines()[1:] == ["README.md"]
    braces = await text(ctx, glob_paths, pattern="{docs,src}/*.{md,py}")
    assert braces.splitlines()[1:] == ["docs/guide.md", "src/app.py"]
    assert (await text(ctx, glob_paths, pattern="util/?elpers.py", path="src")).endswith(
        "util/helpers.py"
    )
    none = await text(ctx, glob_paths, pattern="**/*.rs")
    assert none.startswith("no paths under . match **/*.rs")
    with pytest.raises(ToolError, match="pattern must be relative"):
        await run(ctx, glob_paths, pattern="/etc/*")


@pytest.mark.slow
async def test_regex_files(ctx: Capabilities, layout: Path, engine: str) -> None:
    got = await text(ctx, regex_files, pattern=r"(?i)todo")
    searched = {  # ripgrep counts the binary file it opened and left
        "ripgrep": "(6 files searched)",
        "python": "(5 files searched; skipped 1 binary files)",
    }[engine]
    assert got.splitlines() == [
        "docs/guide.md:2: TODO: write",
        "src/app.py:2: TODO = 1",
        "src/util/helpers.py:2:     return 'todo later'",
        f"3 matching lines in 3 files {searched}",
    ]
    only = await text(ctx, regex_files, pattern="TODO", glob="*.md")
    assert only.splitlines()[0] == "docs/guide.md:2: TODO: write"
    one = await text(ctx, regex_files, pattern="import", path="src/app.py")
    assert one.splitlines()[0] == "src/app.py:1: import os"
    none = await text(ctx, regex_files, pattern="absent-word")
    assert none.startswith(f"no matches for /absent-word/ in . {searched}")
    with pytest.raises(ToolError) as e:
        await run(ctx, regex_files, pattern="*.py")
    assert e.value.code == "INVALID_ARGS"
    assert e.value.message.startswith("bad regex '*.py': nothing to repeat")
    assert e.value.message.endswith("(it is a Python regex, not a glob)")


@pytest.mark.slow
async def test_regex_files_is_bounded(ctx: Capabilities, project: Path) -> None:
    (project / "many.txt").write_text("hit\n" * 50 + "x" * 1000 + "hit\n")
    got = await text(ctx, regex_files, pattern="hit", max_results=10)
    lines = got.splitlines()
    assert len(lines) == 12 and lines[9] == "many.txt:10: hit"
    assert lines[-1] == (
        "[… stopped at 10 matches; narrow the pattern, path or glob, or raise max_results]"
    )
    wide = await text(ctx, regex_files, pattern="x{10}hit")
    assert wide.splitlines()[0] == "many.txt:51: " + "x" * 300 + " […]"


# --- vcs ------------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
        "GIT_AUTHOR_DATE": "2025-01-02T03:04:05Z",
        "GIT_COMMITTER_DATE": "2025-01-02T03:04:05Z",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


@pytest.mark.slow
async def test_vcs_tools_on_a_real_repository(ctx: Capabilities, project: Path) -> None:
    _git(project, "init", "-q", "-b", "main")
    assert await text(ctx, vcs_log) == "no commits yet"
    assert await text(ctx, vcs_kind) == f"git (root: {os.path.realpath(project)})"
    (project / ".env").write_text("TOKEN=1\n")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "first")
    (project / "README.md").write_text("# Demo project\n\nChanged.\n")
    (project / ".env").write_text("TOKEN=2\n")
    (project / "new.txt").write_text("n\n")
    status = await text(ctx, vcs_status)
    assert status.splitlines() == ["## main", " M .env", " M README.md", "?? new.txt"]
    diff = await text(ctx, vcs_diff)
    assert "-Hello.\n+Changed." in diff and "TOKEN" not in diff  # .env stays out
    assert await text(ctx, vcs_diff, staged=True) == "no staged changes"
    _git(project, "add", "README.md")
    staged = await text(ctx, vcs_diff, staged=True)
    assert staged.startswith("diff --git a/README.md b/README.md")
    assert await text(ctx, vcs_diff, path="new.txt") == "no unstaged changes"
    with pytest.raises(ToolError) as e:
        await run(ctx, vcs_diff, path=".env")
    assert e.value.code == "PATH_DENIED"
    log = await text(ctx, vcs_log, max_count=5)
    assert log.split(" ", 1)[1] == "2025-01-02 Ada: first"
    assert await text(ctx, vcs_branch) == f"current: main\n* main {log.split()[0]} first"
    p = await plan(ctx, vcs_diff, path="README.md", staged=True)
    assert (p.title, p.kind, p.confirm) == ("git diff --cached README.md", "read", False)


@pytest.mark.slow
async def test_vcs_outside_a_repository(ctx: Capabilities, project: Path) -> None:
    assert await text(ctx, vcs_kind) == (
        f"none: {project} is in no repository (as found when the session started)"
    )
    with pytest.raises(ToolError) as e:
        await run(ctx, vcs_status)
    assert (e.value.code, e.value.message) == (
        "NOT_A_REPOSITORY",
        f"{project} is not inside a git repository (as found when this session started)",
    )
