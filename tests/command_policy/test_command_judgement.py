"""The judgement of a whole invocation (`tether.command_policy.judge`): argv, environment and
standard input. An environment variable not known to leave a program's behaviour alone makes
a known read-only command ask, and the card names it; input fed to a program that runs it is
code; an "always" answer covers the environment and the code it was given, never another. A
path a reader names outside the session's directories asks, as `read_file` refuses it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tether.command_policy import Command, Decision, judge
from tether.engine.seam import BUILTIN_COMMAND_DENYLIST
from tether.engine.workspace import DirGrant, Workspace


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(project, home, outside): a project inside nothing else, a home with credentials."""
    project, home, outside = (tmp_path / n for n in ("project", "home", "outside"))
    for d in (project / "src", home / ".config" / "rclone", outside):
        d.mkdir(parents=True)
    (project / "a.txt").write_text("a\n")
    (project / "src" / "b.py").write_text("b\n")
    (home / ".pgpass").write_text("db:5432:*:me:hunter2\n")
    (home / ".config" / "rclone" / "rclone.conf").write_text("[s3]\nsecret = x\n")
    (outside / "x.txt").write_text("x\n")
    (project / "out").symlink_to(outside)  # a link in the project pointing out
    (project / "pg").symlink_to(home / ".pgpass")
    monkeypatch.setenv("HOME", str(home))
    # ripgrep comes with the venv (the `ripgrep` wheel): found on PATH like any reader.
    venv_bin = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}{os.pathsep}{venv_bin}")
    assert shutil.which("rg") is not None
    return project, home, outside


def _judge(project: Path, *commands: Command, grants: list[DirGrant] | None = None) -> Decision:
    policy = Workspace([project], grants=list(grants or []))
    return judge(commands, policy, BUILTIN_COMMAND_DENYLIST)


def _ro(project: Path, argv: list[str], **more: object) -> bool:
    return _judge(project, Command(argv, project, **more)).read_only  # type: ignore[arg-type]


# --- the environment ------------------------------------------------------------------------

FSMONITOR = "'core.fsmonitor'='touch x; false'"
RUNS_CODE_ENV = [
    {"GIT_CONFIG_PARAMETERS": FSMONITOR},
    {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": "x"},
    {"GIT_EXTERNAL_DIFF": "touch x"},
    {"GIT_PAGER": "sh"},
    {"GIT_DIR": "/elsewhere/.git"},
    {"GIT_SSH_COMMAND": "sh -c x"},
    {"LD_PRELOAD": "/tmp/evil.so"},
    {"LD_LIBRARY_PATH": "/tmp"},
    {"DYLD_INSERT_LIBRARIES": "/tmp/evil.dylib"},
    {"PAGER": "sh -c x"},
    {"EDITOR": "sh"},
    {"VISUAL": "sh"},
    {"RIPGREP_CONFIG_PATH": "/tmp/rc"},
    {"PYTHONSTARTUP": "x.py"},
    {"PYTHONPATH": "."},
    {"PYTHONWARNINGS": "ignore::evil.Warning"},  # imports the module named
    {"NODE_OPTIONS": "--require ./x.js"},
    {"BASH_ENV": "x.sh"},
    {"ENV": "x.sh"},
    {"PERL5OPT": "-Mevil"},
    {"PERL5LIB": "."},
    {"RUBYOPT": "-revil"},
    {"LESSOPEN": "|sh -c x %s"},
    {"PROMPT_COMMAND": "touch x"},
    {"HOME": "/tmp/planted"},  # ~/.gitconfig and friends from elsewhere
    {"XDG_CONFIG_HOME": "/tmp/planted"},
    {"PATH": "/tmp/planted"},
    {"SOMETHING_NEW": "1"},  # not known to be harmless: shown and asked
]


@pytest.mark.parametrize("env", RUNS_CODE_ENV, ids=lambda e: next(iter(e)))
def test_an_environment_that_may_run_code_makes_a_reader_ask(
    places: tuple[Path, Path, Path], env: dict[str, str]
) -> None:
    project = places[0]
    for argv in (["git", "status"], ["git", "diff"], ["ls"], ["cat", "a.txt"]):
        assert _ro(project, argv), argv  # bare, each runs unasked
        decision = _judge(project, Command(argv, project, env))
        assert not decision.read_only, (argv, env)
        shown = "\n".join(f"{r}\n{p}" for r, p in decision.dangers)
        for name, value in env.items():
            assert name in shown and value in shown, (name, shown)  # the card shows it


@pytest.mark.parametrize(
    "env",
    [
        {"LANG": "C.UTF-8"},
        {"LC_ALL": "C", "LC_MESSAGES": "C"},
        {"TZ": "UTC"},
        {"NO_COLOR": "1", "COLUMNS": "200"},
        {"RUST_LOG": "debug", "RUST_BACKTRACE": "1"},
        {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"},
    ],
)
def test_variables_known_to_be_harmless_keep_a_reader_unasked(
    places: tuple[Path, Path, Path], env: dict[str, str]
) -> None:
    project = places[0]
    decision = _judge(project, Command(["git", "status"], project, env))
    assert decision.read_only and decision.dangers == ()


def test_a_git_configuration_in_the_environment_is_shown_as_the_program_it_runs(
    places: tuple[Path, Path, Path],
) -> None:
    project = places[0]
    decision = _judge(
        project, Command(["git", "status"], project, {"GIT_CONFIG_PARAMETERS": FSMONITOR})
    )
    reasons = [r for r, _ in decision.dangers]
    assert any("core.fsmonitor" in r for r in reasons), reasons
    assert (
        decision.grants[0].scope
        != _judge(project, Command(["git", "status"], project)).grants[0].scope
    )


def test_an_always_answer_covers_the_environment_it_was_given_only(
    places: tuple[Path, Path, Path],
) -> None:
    project = places[0]

    def scope(env: dict[str, str]) -> str:
        return _judge(project, Command(["git", "diff"], project, env)).grants[0].scope

    harmless = scope({"GIT_EXTERNAL_DIFF": "true"})
    assert harmless == scope({"GIT_EXTERNAL_DIFF": "true"})  # the same call, the same grant
    assert harmless != scope({"GIT_EXTERNAL_DIFF": "touch x"})
    assert harmless != scope({})
    assert harmless != scope({"GIT_EXTERNAL_DIFF": "true", "LD_PRELOAD": "x.so"})
    assert (
        "GIT_EXTERNAL_DIFF"
        in _judge(project, Command(["git", "diff"], project, {"GIT_EXTERNAL_DIFF": "true"}))
        .grants[0]
        .label
    )
    # Harmless variables are not part of what a grant covers.
    assert scope({"LANG": "C"}) == scope({})
    # Set through `env NAME=VALUE`, the same.
    wrapped = [
        _judge(project, Command(["env", f"GIT_EXTERNAL_DIFF={v}", "git", "diff"], project))
        .grants[0]
        .scope
        for v in ("true", "touch x")
    ]
    assert wrapped[0] != wrapped[1]


# --- standard input -------------------------------------------------------------------------


def test_input_to_a_program_that_runs_it_is_code(places: tuple[Path, Path, Path]) -> None:
    project = places[0]

    def decide(argv: list[str], stdin: bytes) -> tuple[bool, str, str]:
        d = _judge(project, Command(argv, project, stdin=stdin))
        return d.read_only, d.grants[0].scope, "\n".join(p for _, p in d.dangers)

    for argv in (["sh"], ["bash", "-s"], ["python3", "-"], ["python3"], ["node"]):
        ro, first, shown = decide(argv, b"touch /tmp/marker-one\n")
        assert not ro and "touch /tmp/marker-one" in shown, (argv, shown)
        assert first != decide(argv, b"touch /tmp/marker-two\n")[1], argv
        assert first == decide(argv, b"touch /tmp/marker-one\n")[1], argv
    # `bash --version` is read-only, but not when it is given input to run.
    assert _ro(project, ["bash", "--version"])
    assert not _ro(project, ["bash", "--version"], stdin=b"touch x\n")
    # A reader reads its input as data.
    assert _ro(project, ["cat"], stdin=b"hello\n")
    assert _ro(project, ["grep", "x"], stdin=b"x\n")


def test_a_pipe_into_a_program_that_runs_its_input_is_granted_for_that_pipe(
    places: tuple[Path, Path, Path],
) -> None:
    project = places[0]

    def scope(upstream: list[str]) -> str:
        d = _judge(
            project,
            Command(upstream, project),
            Command(["sh"], project, stdin_from=tuple(upstream)),
        )
        return d.grants[1].scope

    assert scope(["cat", "a.txt"]) == scope(["cat", "a.txt"])
    assert scope(["cat", "a.txt"]) != scope(["cat", "src/b.py"])


# --- paths outside the session's directories ------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["cat", "~/.pgpass"],
        ["cat", "a.txt", "~/.config/rclone/rclone.conf"],
        ["head", "-n", "5", "{home}/.pgpass"],
        ["cat", "../outside/x.txt"],
        ["cat", "src/../../outside/x.txt"],
        ["cat", "out/x.txt"],  # a link inside the project pointing out
        ["cat", "pg"],
        ["tail", "out"],
        ["ls", "/"],
        ["ls", "{outside}"],
        ["cat", "/proc/self/environ"],
        ["stat", "~"],
        ["wc", "-l", "{outside}/x.txt"],
        ["find", "{outside}", "-name", "*.txt"],
        ["find", ".", "-newer", "{home}/.pgpass"],
        ["grep", "-f", "{home}/.pgpass", "a.txt"],
        ["grep", "-f{home}/.pgpass", "a.txt"],
        ["grep", "--file={home}/.pgpass", "a.txt"],
        ["grep", "-r", "secret", "{home}"],
        ["rg", "--ignore-file={home}/.pgpass", "x"],
        ["rg", "x", "{outside}"],
        ["wc", "--files0-from={home}/.pgpass"],
        ["du", "--files0-from={home}/.pgpass"],
        ["sort", "--files0-from={home}/.pgpass"],
        ["diff", "a.txt", "{outside}/x.txt"],
        ["git", "-C", "{outside}", "status"],
        ["git", "--work-tree={outside}", "log"],
        ["git", "diff", "--no-index", "a.txt", "{home}/.pgpass"],
        ["date", "--file={home}/.pgpass"],
    ],
)
def test_a_reader_naming_a_path_outside_the_session_asks(
    places: tuple[Path, Path, Path], argv: list[str]
) -> None:
    project, home, outside = places
    argv = [a.format(home=home, outside=outside) for a in argv]
    assert not _ro(project, argv), argv


@pytest.mark.parametrize(
    "argv",
    [
        ["cat", "a.txt"],
        ["cat", "./src/../a.txt"],
        ["cat", "{project}/src/b.py"],
        ["grep", "-rn", "TODO", "src"],
        ["grep", "--color=never", "-e", "x", "a.txt"],
        ["find", ".", "-name", "*.py", "-type", "f"],
        ["rg", "-n", "--glob=*.py", "x"],
        ["ls", "-la"],
        ["diff", "a.txt", "/dev/null"],
        ["git", "log", "--format=%H %s", "-5"],
        ["git", "-C", "src", "status"],
        ["head", "-n5", "a.txt"],
    ],
)
def test_a_reader_inside_the_session_runs_unasked(
    places: tuple[Path, Path, Path], argv: list[str]
) -> None:
    project = places[0]
    assert _ro(project, [a.format(project=project) for a in argv]), argv


@pytest.mark.parametrize(
    "argv",
    [
        ["grep", "-R", "secret", "."],  # follows the link `out` to outside
        ["grep", "-rnR", "secret"],
        ["grep", "--dereference-recursive", "secret", "."],
        ["rg", "-L", "secret"],
        ["rg", "--follow", "secret"],
        ["find", "-L", ".", "-name", "*.txt"],
        ["find", ".", "-follow"],
        ["ls", "-RL"],
        ["du", "-L", "."],
        ["tree", "-l"],
        ["diff", "mine", "theirs"],  # two directories: their files compared, links followed
        ["diff", "-r", "mine", "theirs"],
        ["sort", "--files0-from=list"],  # the names in the list are not checked
        ["wc", "--files0-from=list"],
        ["find", "-files0-from", "list"],
    ],
)
def test_a_reader_that_would_follow_links_or_lists_out_asks(
    places: tuple[Path, Path, Path], argv: list[str]
) -> None:
    project, home, _ = places
    for side in ("mine", "theirs"):
        (project / side).mkdir()
    (project / "mine" / "x").symlink_to(home / ".pgpass")
    (project / "theirs" / "x").write_text("x\n")
    (project / "list").write_text(f"{home / '.pgpass'}\0")
    assert not _ro(project, argv), argv
    # Without the option, or on files, the same readers run unasked.
    assert _ro(project, ["grep", "-rn", "secret", "."])
    assert _ro(project, ["diff", "a.txt", "theirs/x"])
    assert _ro(project, ["ls", "-la", "mine"])


def test_a_directory_granted_for_reading_is_inside(places: tuple[Path, Path, Path]) -> None:
    project, _, outside = places
    argv = ["cat", str(outside / "x.txt")]
    assert not _judge(project, Command(argv, project)).read_only
    assert _judge(project, Command(argv, project), grants=[DirGrant(outside)]).read_only


def test_a_link_swapped_behind_a_dotdot_is_followed(places: tuple[Path, Path, Path]) -> None:
    """`link/../x` is where the kernel goes (the link's parent), not `./x`."""
    project, home, _ = places
    deep = home / "deep"
    deep.mkdir()
    (project / "hop").symlink_to(deep)
    assert os.path.realpath(project / "hop" / ".." / ".pgpass") == str(home / ".pgpass")
    assert not _ro(project, ["cat", "hop/../.pgpass"])
