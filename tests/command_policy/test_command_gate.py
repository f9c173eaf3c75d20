"""What runs unasked, what a grant covers, what the denylist refuses: the allowlist of known
read-only invocations (fail closed: an unknown option is not read-only), grants scoped to a
program's subcommand and class, and denylisted programs known by name, by alias and by file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tether.command_policy.allowlist import read_only
from tether.command_policy.denylist import Denylist
from tether.command_policy.grant_scope import command_grant
from tether.command_policy.scan import git_config, scan


def _anything(word: str) -> bool:
    return True


def _no_secrets(word: str) -> bool:
    return ".env" not in word and "id_rsa" not in word


@pytest.mark.parametrize(
    "argv",
    [
        ["ls", "-la", "src"],
        ["cat", "README.md"],
        ["head", "-n", "5", "a.txt"],
        ["grep", "-rn", "TODO", "src"],
        ["rg", "-n", "fn main"],
        ["find", ".", "-name", "*.py", "-type", "f"],
        ["git", "status", "--short"],
        ["git", "log", "--oneline", "-5"],
        ["git", "diff", "HEAD~1"],
        ["git", "show", "HEAD:README.md"],
        ["git", "-C", "sub", "status"],
        ["git", "branch", "-a"],
        ["git", "config", "--get", "user.name"],
        ["git", "stash", "list"],
        ["wc", "-l", "a.txt"],
        ["sort", "names.txt"],
        ["uniq", "-c", "names.txt"],
        ["date", "+%F"],
        ["python3", "--version"],
        ["go", "version"],
        ["env"],
    ],
)
def test_known_read_only_invocations(argv: list[str]) -> None:
    assert read_only(argv, _no_secrets)


@pytest.mark.parametrize(
    "argv",
    [
        ["cat", ".env"],  # a denylisted file
        ["head", "/home/u/.ssh/id_rsa"],
        ["find", ".", "-delete"],
        ["find", ".", "-exec", "rm", "{}", ";"],
        ["find", ".", "-fprint", "out"],
        ["rg", "--pre", "sh", "x"],
        ["rg", "-zn", "x"],  # a cluster carries -z (decompressors)
        ["sort", "-o", "out", "in"],
        ["sort", "--output=out", "in"],
        ["uniq", "in", "out"],  # the second operand is written
        ["date", "-s", "2020-01-01"],
        ["date", "0101000020"],
        ["git", "-c", "core.pager=sh", "log"],
        ["git", "--config-env=core.pager=X", "log"],
        ["git", "diff", "--ext-diff"],
        ["git", "log", "--output=x"],
        ["git", "checkout", "--", "."],
        ["git", "clean", "-fdx"],
        ["git", "branch", "new-branch"],
        ["git", "config", "user.name", "x"],
        ["git", "st"],  # an alias: anything
        ["python3", "-c", "print(1)"],
        ["python3", "script.py"],
        ["./ls"],  # a path runs whatever file is there
        ["env", "dd"],  # a wrapper
        ["tree", "-o", "out"],
        ["hostname", "evil"],
        ["unknown-program"],
    ],
)
def test_everything_else_is_not_known_to_be_read_only(argv: list[str]) -> None:
    assert not read_only(argv, _no_secrets)


def test_grants_cover_a_subcommand_and_its_class_never_the_program() -> None:
    status = command_grant(["git", "status"], "read-only")
    assert (status.scope, status.label) == ("git status [read-only]", "`git status`")
    checkout = command_grant(["git", "checkout", "--", "."], "writing")
    assert checkout.scope == "git checkout [writing]" != status.scope
    assert checkout.label == "`git checkout` (writing)"
    # A configured git is not the same git: `-c` shows in what the grant covers.
    assert command_grant(["git", "-c", "alias.x=!rm", "status"], "writing").scope == (
        "git -c status [writing]"
    )
    version = command_grant(["python3", "--version"], "read-only")
    code = command_grant(["python3", "-c", "import os"], "runs code")
    other = command_grant(["python3", "-c", "import sys"], "runs code")
    assert version.scope == "python3 --version [read-only]"
    assert code.scope.startswith("python3 -c code#") and code.scope != other.scope
    assert command_grant(["python3", "tools/gen.py"], "runs code").scope == (
        "python3 tools/gen.py [runs code]"
    )
    assert command_grant(["uv", "run", "pytest", "-q"], "writing").scope == (
        "uv run pytest [writing]"
    )
    assert command_grant(["npm", "run", "build"], "runs code").scope == "npm run [runs code]"


def test_git_aliases_and_configuration_are_followed() -> None:
    deny = Denylist.from_config(["git push --force"])
    hit = deny.check(["git", "-c", "alias.p=push --force", "p"])
    assert hit is not None and "push --force" in hit.message()
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "alias.d", "GIT_CONFIG_VALUE_0": "!dd of=x"}
    assert deny.check(["git", "d"], env) is not None
    assert deny.check(["env", *(f"{k}={v}" for k, v in env.items()), "git", "d"]) is not None
    assert deny.check(["git", "--config-env=alias.d=CMD", "d"], {"CMD": "!sudo id"}) is not None
    pager = scan(["git", "-c", "core.pager=sudo less", "log"])
    assert "sudo" in [i.program for i in pager.invocations]
    assert git_config(["git", "-c", "Alias.X=log"], {}) == [("alias.x", "log")]
    assert deny.check(["git", "-c", "alias.s=status", "s"]) is None


@pytest.mark.skipif(shutil.which("dd") is None, reason="needs dd")
def test_a_denylisted_program_is_known_by_its_file(tmp_path: Path) -> None:
    deny = Denylist.default()
    dd = Path(os.path.realpath(shutil.which("dd") or ""))
    (tmp_path / "zap").symlink_to(dd)
    shutil.copy(dd, tmp_path / "copy")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "mydd").symlink_to(dd)
    for argv, env in (
        (["./zap", "of=x"], {}),
        (["./copy", "of=x"], {}),
        (["mydd", "of=x"], {"PATH": str(tmp_path / "bin")}),
        (["env", f"PATH={tmp_path / 'bin'}", "mydd"], {}),
    ):
        hit = deny.check(argv, env, tmp_path)
        assert hit is not None and "the same program" in hit.message(), argv
    assert deny.check(["./zap", "of=x"]) is None  # without a cwd, names only
    assert deny.check(["ls"], {}, tmp_path) is None


@pytest.mark.slow
def test_the_gate_keeps_the_denylist_function_whatever_loaded_first() -> None:
    """The policy's parts load when a command is first judged; a warm server imports every
    module up front instead. Either way the gate's `denylist` is the function, not the
    `command_policy.denylist` module that shares its name (a worker's every command failed
    with "'module' object is not callable" when the module had loaded first)."""
    import subprocess
    import sys

    from tests.support.harness import REPO

    code = (
        "import tether.command_policy.denylist\n"
        "from tether.tools import command_gate\n"
        "assert callable(command_gate.denylist), command_gate.denylist\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=30)
