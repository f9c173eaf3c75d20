"""The Agent Skills specification's rules as tether applies them, on real directories: the
SKILL.md header (the YAML subset), the name and description limits, the order of the roots,
the catalog's bytes, and the `[skills]` table's errors with their lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.test_config import errors_of
from tether.engine.skills.frontmatter import FrontmatterError, split
from tether.engine.skills.skill_catalog import catalog, resources
from tether.engine.skills.skill_discovery import discover
from tether.engine.skills.skill_roots import SkillPlaces, SkillRoot
from tether.errors import ToolError


def test_the_header_subset_reads_what_skills_write() -> None:
    doc = split(
        "---\n"
        "name: pdf-forms  # a comment\n"
        "description: Fill PDF forms. Use when\n"
        "  the user mentions forms.\n"
        "license: 'Apache-2.0'\n"
        'compatibility: "Needs \\"pdftk\\""\n'
        "metadata:\n"
        "  author: example-org\n"
        '  version: "1.0"\n'
        "allowed-tools: Bash(git:*) Read\n"
        "notes: >\n"
        "  one\n"
        "  two\n"
        "\n"
        "  three\n"
        "tags: [a, 'b']\n"
        "more:\n"
        "  - c\n"
        "---\n"
        "# Body\n"
    )
    assert doc.fields == {
        "name": "pdf-forms",
        "description": "Fill PDF forms. Use when the user mentions forms.",
        "license": "Apache-2.0",
        "compatibility": 'Needs "pdftk"',
        "metadata": {"author": "example-org", "version": "1.0"},
        "allowed-tools": "Bash(git:*) Read",
        "notes": "one two\nthree\n",
        "tags": ["a", "b"],
        "more": ["c"],
    }
    assert doc.body == "# Body\n"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("name: x\n", "must start with a YAML frontmatter block"),
        ("---\nname: x\n", "is not closed"),
        ("---\nname: x\nname: y\n---\n", "line 3: `name` is given twice"),
        ("---\nname: x\n  oops: 1\nkey\n---\n", "line 4: expected `key: value`"),
        ("---\ndescription: 'open\n---\n", "line 2: a quoted value is not closed"),
        ("---\ndescription: {a: 1}\n---\n", "line 2: this YAML form is not supported"),
    ],
)
def test_a_header_outside_the_subset_is_an_error_naming_its_line(text: str, error: str) -> None:
    with pytest.raises(FrontmatterError, match=error):
        split(text)


def _skill(root: Path, directory: str, header: str) -> None:
    (root / directory).mkdir(parents=True)
    (root / directory / "SKILL.md").write_text(f"---\n{header}---\nBody.\n")


@pytest.mark.parametrize(
    ("directory", "header", "problem"),
    [
        ("a", "description: d\n", "`name` is missing"),
        ("a" * 65, f"name: {'a' * 65}\ndescription: d\n", "longer than 64"),
        ("-a", "name: -a\ndescription: d\n", "lowercase letters, digits and single hyphens"),
        ("a--b", "name: a--b\ndescription: d\n", "single hyphens"),
        ("Ab", "name: Ab\ndescription: d\n", "lowercase"),
        ("a", "name: b\ndescription: d\n", "does not match its directory"),
        ("a", "name: a\n", "`description` is missing"),
        ("a", "name: a\ndescription: ''\n", "`description` is missing"),
        ("a", f"name: a\ndescription: {'d' * 1025}\n", "longer than 1024"),
        ("a", f"name: a\ndescription: d\ncompatibility: {'c' * 501}\n", "longer than 500"),
        ("a", "name: a\ndescription: d\nmetadata: [x]\n", "`metadata` must be a mapping"),
    ],
)
def test_a_skill_breaking_the_specification_is_reported_and_left_out(
    tmp_path: Path, directory: str, header: str, problem: str
) -> None:
    _skill(tmp_path, directory, header)
    _skill(tmp_path, "fine", "name: fine\ndescription: A good one.\n")
    found = discover([SkillRoot(tmp_path, "config")])
    assert [s.name for s in found.skills] == ["fine"]
    [reported] = found.problems
    assert reported.path == tmp_path / directory / "SKILL.md" and problem in reported.message


def test_the_longest_allowed_values_pass(tmp_path: Path) -> None:
    name = "a" * 64
    _skill(tmp_path, name, f"name: {name}\ndescription: {'d' * 1024}\n")
    assert [s.name for s in discover([SkillRoot(tmp_path, "config")]).skills] == [name]


def test_roots_walk_up_to_the_repository_and_keep_their_order(tmp_path: Path) -> None:
    repo = tmp_path / "outer" / "repo"
    deep = repo / "a" / "b"
    deep.mkdir(parents=True)
    (repo / ".git").mkdir()
    home = tmp_path / "home"
    places = SkillPlaces(tmp_path / "data" / "skills", ("~/shared", "local-skills"))
    roots = places.roots(deep, home=home)
    project = [r.path for r in roots if r.source == "project"]
    assert project == [
        d / sub for d in (deep, repo / "a", repo) for sub in (".agents/skills", ".claude/skills")
    ]
    rest = [(r.path, r.source) for r in roots if r.source != "project"]
    assert rest == [
        (home / ".agents/skills", "user"),
        (home / ".claude/skills", "user"),
        (tmp_path / "data" / "skills", "tether"),
        (Path.home() / "shared", "config"),
        (deep / "local-skills", "config"),
    ]
    # Outside any repository, only the directory itself.
    lone = tmp_path / "lone"
    lone.mkdir()
    assert [r.path.parent.parent for r in places.roots(lone, home=home)[:2]] == [lone, lone]


def test_the_catalog_is_sorted_and_the_same_bytes_each_time(tmp_path: Path) -> None:
    for name in ("zeta", "alpha", "mid"):
        _skill(tmp_path, name, f"name: {name}\ndescription: The {name}\n  skill.\n")
    roots = [SkillRoot(tmp_path, "config")]
    first = catalog(discover(roots))
    assert first.splitlines()[-3:] == [
        "- alpha: The alpha skill.",
        "- mid: The mid skill.",
        "- zeta: The zeta skill.",
    ]
    assert catalog(discover(roots)) == first
    assert catalog(discover([])) == ""


def test_resources_are_listed_without_hidden_files(tmp_path: Path) -> None:
    _skill(tmp_path, "s", "name: s\ndescription: d\n")
    for rel in ("scripts/run.py", "references/a.md", "assets/t.txt", ".hidden/x", "scripts/.y"):
        (tmp_path / "s" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "s" / rel).write_text("x")
    assert [p.relative_to(tmp_path / "s").as_posix() for p in resources(tmp_path / "s")] == [
        "assets/t.txt",
        "references/a.md",
        "scripts/run.py",
    ]


def test_the_skills_table_is_checked_with_its_line() -> None:
    lines = errors_of("[skills]\npaths = [1]\n")
    assert any(line.startswith("/cfg/config.toml:2: skills.paths") for line in lines), lines
    lines = errors_of("[skills]\npath = []\n")
    assert any("/cfg/config.toml:2: skills.path: unknown key" in line for line in lines), lines


@pytest.mark.anyio
async def test_skill_list_and_skill_read_look_afresh(tmp_path: Path) -> None:
    from tests.support.toolctx import make_ctx, text
    from tether.tools.skills import skill_list, skill_read

    first, second = tmp_path / "first", tmp_path / "second"
    _skill(first, "one", "name: one\ndescription: The first.\n")
    _skill(second, "one", "name: one\ndescription: A copy.\n")
    _skill(second, "broken", "name: other\ndescription: d\n")
    ctx = make_ctx(tmp_path, tmp_path / "spill", sandbox=None)
    ctx.skills = (SkillRoot(first, "project"), SkillRoot(second, "config"))
    listed = await text(ctx, skill_list)
    assert f"- one: The first. ({first / 'one'}, project)" in listed
    assert f"- {second / 'one'} (by {first / 'one'})" in listed
    assert f"- {second / 'broken' / 'SKILL.md'}: `name` 'other' does not match" in listed
    with pytest.raises(ToolError, match="no skill named 'two' \\(skills: one\\)"):
        await text(ctx, skill_read, name="two")
    _skill(second, "two", "name: two\ndescription: Made later.\n")  # no cache to go stale
    assert "Body." in await text(ctx, skill_read, name="two")
