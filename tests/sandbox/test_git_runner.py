"""tether's own git (engine/vcs/) against real git: no config of any scope and no environment
variable of tether's makes it run a program, and it runs on the repository the session found at
start, never on one that appeared since.

Each vector plants, in a repository (its config, its attributes, the user's global config,
tether's environment, its PATH), a program that appends to a mark file outside the repository.
Every entry point of the runner then runs (discovery, the look's status and submodule list, the
snapshot's summary, the vcs tools' status, diff, log and branch, sync and async): no mark. Then
plain git, as a user would run it, runs the planted program: the plant is real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether.engine.sandbox import protect
from tether.engine.system_prompt import _git_summary
from tether.engine.vcs.repository import Repositories, find_repository
from tether.errors import GitRefused, RepositoryChanged

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
WHO = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}
# What the vcs tools run (async), besides the look's and the snapshot's own calls; and a log
# with patches (its diff drivers), and the rest of the subcommands the runner allows (sync).
VCS_TOOLS: tuple[tuple[str, ...], ...] = (
    ("status", "--short", "--branch"),
    ("diff", "--", "."),
    ("diff", "--cached", "--", "."),
    ("log", "--max-count=5", "--date=short", "--format=%h %ad %an: %s"),
    ("branch", "--list", "-vv"),
)
OTHERS: tuple[tuple[str, ...], ...] = (("log", "-p", "--max-count=2"), ("config", "--list"))


@dataclass
class Rig:
    """A repository (`repo`), and outside it a home and the planted program and its mark."""

    root: Path
    url: str  # an HTTP remote that wants credentials
    env: dict[str, str] = field(default_factory=dict[str, str])  # tether's environment, planted

    @property
    def repo(self) -> Path:
        return self.root / "repo"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def mark(self) -> Path:
        return self.outside / "MARK"

    @property
    def program(self) -> str:
        return str(self.outside / "plant")

    def git(self, *args: str, cwd: Path | None = None) -> str:
        """Plain git, for building the repository (before anything is planted)."""
        env = {**os.environ, **WHO, "HOME": str(self.home), "GIT_CONFIG_NOSYSTEM": "1"}
        done = subprocess.run(
            ["git", *args], cwd=cwd or self.repo, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def config(self, key: str, value: str, where: Path | None = None) -> None:
        path = where or self.repo / ".git" / "config"
        subprocess.run(["git", "config", "--file", str(path), key, value], check=True)

    def attributes(self, text: str) -> None:
        (self.repo / ".gitattributes").write_text(text)


def _rig(root: Path, url: str = "http://127.0.0.1:9") -> Rig:
    rig = Rig(root, url)
    for d in (rig.repo, rig.outside, rig.home, rig.home / ".config"):
        d.mkdir(parents=True)
    plant = rig.outside / "plant"
    plant.write_text(f'#!/bin/sh\necho "$0 $*" >> {rig.mark}\nexit 1\n')
    plant.chmod(0o755)
    rig.git("init", "-q", "-b", "main")
    (rig.repo / "clean.txt").write_text("committed\n")
    (rig.repo / "changed.txt").write_text("v1\n")
    (rig.repo / "src").mkdir()
    (rig.repo / "src" / "app.py").write_text("print('app')\n")
    rig.git("add", "-A")
    rig.git("commit", "-q", "-m", "one")
    (rig.repo / "changed.txt").write_text("v2, changed\n")
    _touch(rig.repo / "clean.txt", rig.repo / "src" / "app.py")
    return rig


def _touch(*paths: Path) -> None:
    """A new mtime, the same content: git must read the file (through its filters) to know."""
    later = time.time() + 120
    for p in paths:
        os.utime(p, (later, later))


# --- what can be planted, and what makes plain git run it -----------------------------------

Control = list[str]  # the command (plain git, as a user runs it) that runs the plant


def fsmonitor(rig: Rig) -> Control:
    rig.config("core.fsmonitor", rig.program)
    return ["git", "status"]


def hook(rig: Rig) -> Control:
    hook = rig.repo / ".git" / "hooks" / "post-index-change"
    shutil.copy(rig.program, hook)
    return ["git", "status"]  # refreshing the stat-dirty index writes it: the hook runs


def hooks_path(rig: Rig) -> Control:
    (rig.repo / "hooks").mkdir()
    shutil.copy(rig.program, rig.repo / "hooks" / "post-index-change")
    rig.config("core.hooksPath", "hooks")
    return ["git", "status"]


def clean_filter(rig: Rig) -> Control:
    rig.config("filter.x.clean", rig.program)
    rig.attributes("*.txt filter=x\n")
    return ["git", "status"]


def process_filter(rig: Rig) -> Control:
    rig.config("filter.y.process", rig.program)
    rig.config("filter.y.required", "true")
    rig.attributes("*.py filter=y\n")
    return ["git", "status"]


def smudge_filter(rig: Rig) -> Control:
    (rig.repo / "clean.txt").write_text("edited\n")  # so that checkout writes it
    rig.config("filter.s.smudge", rig.program)
    rig.attributes("*.txt filter=s\n")
    return ["git", "checkout", "--", "clean.txt"]


def included_filter(rig: Rig) -> Control:
    """A config file in the work tree (writable to a confined command) the config includes."""
    rig.config("include.path", "../included.cfg")
    rig.config("filter.inc.clean", rig.program, rig.repo / "included.cfg")
    rig.attributes("*.txt filter=inc\n")
    return ["git", "status"]


def include_if(rig: Rig) -> Control:
    rig.config(f"includeIf.gitdir:{rig.repo}/.path", str(rig.outside / "if.cfg"))
    rig.config("filter.cond.process", rig.program, rig.outside / "if.cfg")
    rig.attributes("*.py filter=cond\n")
    return ["git", "status"]


def global_config(rig: Rig) -> Control:
    rig.config("core.fsmonitor", rig.program, rig.home / ".gitconfig")
    rig.config("filter.glob.clean", rig.program, rig.home / ".gitconfig")
    rig.attributes("*.txt filter=glob\n")
    return ["git", "status"]


def xdg_config(rig: Rig) -> Control:
    (rig.home / ".config" / "git").mkdir()
    rig.config("filter.xdg.process", rig.program, rig.home / ".config" / "git" / "config")
    rig.attributes("*.py filter=xdg\n")
    return ["git", "status"]


def attributes_file(rig: Rig) -> Control:
    """The global attributes file names a driver the repository's config defines."""
    (rig.home / "attributes").write_text("*.txt filter=af\n")
    rig.config("core.attributesFile", str(rig.home / "attributes"), rig.home / ".gitconfig")
    rig.config("filter.af.clean", rig.program)
    return ["git", "status"]


def system_config(rig: Rig) -> Control:
    rig.config("core.fsmonitor", rig.program, rig.outside / "system.cfg")
    rig.env["GIT_CONFIG_SYSTEM"] = str(rig.outside / "system.cfg")
    return ["git", "status"]


def config_parameters(rig: Rig) -> Control:
    rig.env["GIT_CONFIG_PARAMETERS"] = f"'core.fsmonitor'='{rig.program}'"
    return ["git", "status"]


def config_count(rig: Rig) -> Control:
    rig.env.update(
        GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="core.fsmonitor", GIT_CONFIG_VALUE_0=rig.program
    )
    return ["git", "status"]


def git_dir_variable(rig: Rig) -> Control:
    """GIT_DIR in tether's environment names another repository, with fsmonitor."""
    other = rig.outside / "other.git"
    shutil.copytree(rig.repo / ".git", other)
    rig.config("core.fsmonitor", rig.program, other / "config")
    rig.env["GIT_DIR"] = str(other)
    return ["git", "status"]


def external_diff(rig: Rig) -> Control:
    rig.config("diff.external", rig.program)
    return ["git", "diff"]


def external_diff_variable(rig: Rig) -> Control:
    rig.env["GIT_EXTERNAL_DIFF"] = rig.program
    return ["git", "diff"]


def diff_driver(rig: Rig) -> Control:
    rig.config("diff.dd.command", rig.program)
    rig.attributes("*.txt diff=dd\n")
    return ["git", "diff"]


def textconv(rig: Rig) -> Control:
    rig.config("diff.tc.textconv", rig.program)
    rig.attributes("*.txt diff=tc\n")
    return ["git", "diff"]


def pager(rig: Rig) -> Control:
    rig.config("core.pager", rig.program)
    rig.config("pager.log", rig.program)
    rig.env.update(GIT_PAGER=rig.program, PAGER=rig.program)
    return ["script", "-qec", "git log", os.devnull]  # a terminal: git pages


def editor(rig: Rig) -> Control:
    rig.config("core.editor", rig.program)
    rig.config("sequence.editor", rig.program)
    rig.env.update(GIT_EDITOR=rig.program, EDITOR=rig.program, VISUAL=rig.program)
    return ["git", "commit", "--allow-empty"]


def merge_driver(rig: Rig) -> Control:
    rig.config("merge.md.driver", rig.program)
    rig.attributes("*.txt merge=md\n")
    rig.git("checkout", "-q", "-b", "other")
    (rig.repo / "changed.txt").write_text("other side\n")
    rig.git("commit", "-q", "-am", "other")
    rig.git("checkout", "-q", "main")
    (rig.repo / "changed.txt").write_text("main side\n")
    rig.git("commit", "-q", "-am", "main")
    return ["git", "-c", "user.name=t", "-c", "user.email=t@e", "merge", "other"]


def signature(rig: Rig) -> Control:
    _signed_head(rig, "PGP")
    rig.config("gpg.program", rig.program)
    rig.config("log.showSignature", "true")
    return ["git", "log"]


def ssh_signature(rig: Rig) -> Control:
    _signed_head(rig, "SSH")
    (rig.outside / "allowed").write_text("")
    rig.config("gpg.ssh.program", rig.program)
    rig.config("gpg.ssh.allowedSignersFile", str(rig.outside / "allowed"))
    rig.config("log.showSignature", "true")
    return ["git", "log"]


def submodule(rig: Rig) -> Control:
    """A submodule whose own config (here its git dir in the superproject's) names a filter."""
    source = rig.outside / "subsource"
    source.mkdir()
    rig.git("init", "-q", "-b", "main", cwd=source)
    (source / "s.txt").write_text("s\n")
    rig.git("add", "-A", cwd=source)
    rig.git("commit", "-q", "-m", "s", cwd=source)
    rig.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "sub")
    rig.git("commit", "-q", "-m", "sub")
    rig.config("filter.sm.clean", rig.program, rig.repo / ".git" / "modules" / "sub" / "config")
    (rig.repo / "sub" / ".gitattributes").write_text("*.txt filter=sm\n")
    _touch(rig.repo / "sub" / "s.txt")
    return ["git", "status"]


def git_on_path(rig: Rig) -> Control:
    """tether's PATH leads into the project (an activated `.venv`): a `git` planted there."""
    bin_dir = rig.repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy(rig.program, bin_dir / "git")
    rig.env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    return ["git", "status"]


# A partial clone's missing blob makes `git diff` fetch it: whatever connects then runs.


def ssh_command(rig: Rig) -> Control:
    _promisor(rig, "ssh://example.invalid/x.git")
    rig.config("core.sshCommand", rig.program)
    return ["git", "diff"]


def ssh_allowed_anyway(rig: Rig) -> Control:
    """`protocol.ssh.allow=always` in the repository beats a `-c protocol.allow=never`."""
    _promisor(rig, "ssh://example.invalid/x.git")
    rig.config("protocol.ssh.allow", "always")
    rig.config("core.sshCommand", rig.program)
    return ["git", "diff"]


def ssh_variables(rig: Rig) -> Control:
    _promisor(rig, "ssh://example.invalid/x.git")
    rig.env.update(GIT_SSH_COMMAND=rig.program, GIT_SSH=rig.program)
    return ["git", "diff"]


def git_proxy(rig: Rig) -> Control:
    _promisor(rig, "git://127.0.0.1:9/x.git")
    rig.config("core.gitProxy", rig.program)
    rig.env["GIT_PROXY_COMMAND"] = rig.program
    return ["git", "diff"]


def remote_helper(rig: Rig) -> Control:
    _promisor(rig, "evil::somewhere")
    helpers = rig.outside / "helpers"
    helpers.mkdir()
    shutil.copy(rig.program, helpers / "git-remote-evil")
    rig.env["PATH"] = f"{helpers}{os.pathsep}{os.environ['PATH']}"
    return ["git", "diff"]


def pack_objects_hook(rig: Rig) -> Control:
    source = rig.outside / "source.git"
    rig.git("clone", "-q", "--bare", str(rig.repo), str(source))
    _promisor(rig, f"file://{source}")
    rig.config("uploadpack.packObjectsHook", rig.program, rig.home / ".gitconfig")
    return ["git", "diff"]


def alternate_refs(rig: Rig) -> Control:
    """Fetching into a repository that borrows objects lists the lender's refs: by a command."""
    source, lender = rig.outside / "source.git", rig.outside / "lender.git"
    rig.git("clone", "-q", "--bare", str(rig.repo), str(source))
    rig.git("init", "-q", "--bare", str(lender))
    (rig.repo / ".git" / "objects" / "info" / "alternates").write_text(f"{lender}/objects\n")
    _promisor(rig, f"file://{source}")
    rig.config("core.alternateRefsCommand", rig.program)
    return ["git", "diff"]


def credential_helper(rig: Rig) -> Control:
    _promisor(rig, f"{rig.url}/x.git")
    rig.config("credential.helper", f"!{rig.program}")
    return ["git", "diff"]


def askpass(rig: Rig) -> Control:
    _promisor(rig, f"{rig.url}/x.git")
    rig.config("core.askPass", rig.program)
    rig.env.update(GIT_ASKPASS=rig.program, SSH_ASKPASS=rig.program)
    return ["git", "diff"]


def _promisor(rig: Rig, url: str) -> None:
    """The repository as a partial clone of `url`, missing the blob `git diff` needs."""
    blob = rig.git("rev-parse", ":changed.txt").strip()
    (rig.repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    rig.config("core.repositoryformatversion", "1")
    rig.config("extensions.partialClone", "origin")
    rig.config("remote.origin.promisor", "true")
    rig.config("remote.origin.url", url)


def _signed_head(rig: Rig, kind: str) -> None:
    """A commit carrying a (made up) signature, made HEAD: showing it verifies it."""
    tree = rig.git("rev-parse", "HEAD^{tree}").strip()
    head = rig.git("rev-parse", "HEAD").strip()
    body = (
        f"tree {tree}\nparent {head}\nauthor t <t@e> 1 +0000\ncommitter t <t@e> 1 +0000\n"
        f"gpgsig -----BEGIN {kind} SIGNATURE-----\n U0lH\n -----END {kind} SIGNATURE-----\n"
        "\nsigned\n"
    )
    (rig.outside / "commit").write_text(body)
    commit = rig.git("hash-object", "-t", "commit", "-w", str(rig.outside / "commit")).strip()
    rig.git("update-ref", "HEAD", commit)


VECTORS: list[Callable[[Rig], Control]] = [
    fsmonitor,
    hook,
    hooks_path,
    clean_filter,
    process_filter,
    smudge_filter,
    included_filter,
    include_if,
    global_config,
    xdg_config,
    attributes_file,
    system_config,
    config_parameters,
    config_count,
    git_dir_variable,
    external_diff,
    external_diff_variable,
    diff_driver,
    textconv,
    pager,
    editor,
    merge_driver,
    signature,
    ssh_signature,
    submodule,
    git_on_path,
    ssh_command,
    ssh_allowed_anyway,
    ssh_variables,
    git_proxy,
    remote_helper,
    pack_objects_hook,
    alternate_refs,
    credential_helper,
    askpass,
]


class _Unauthorized(BaseHTTPRequestHandler):
    """An HTTP remote that wants credentials (git then asks helpers and askpass)."""

    hits: list[str] = []

    def do_GET(self) -> None:
        _Unauthorized.hits.append(self.path)
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="x"')
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def http_remote() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Unauthorized.hits.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def _every_entry_point(rig: Rig) -> None:
    """Everything tether's own git does, as its callers do it."""
    repo = find_repository(rig.repo)
    assert repo is not None and repo.top == rig.repo.resolve()
    assert rig.repo / ".git" in protect.uncommitted_work(rig.repo, repo).paths
    assert (await _git_summary(repo, rig.repo)).startswith("branch ")
    for args in VCS_TOOLS:
        await repo.agit(*args, timeout=30, limit=120_000)
    for args in OTHERS:
        repo.git(*args, timeout=30)


@pytest.mark.parametrize("vector", VECTORS, ids=[v.__name__ for v in VECTORS])
async def test_nothing_planted_runs(
    vector: Callable[[Rig], Control],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    http_remote: str,
) -> None:
    rig = _rig(tmp_path, http_remote)
    control = vector(rig)
    home = {"HOME": str(rig.home), "XDG_CONFIG_HOME": str(rig.home / ".config")}
    with monkeypatch.context() as m:
        for key, value in {**home, **rig.env}.items():
            m.setenv(key, value)  # tether's own environment
        await _every_entry_point(rig)
    assert not rig.mark.exists(), rig.mark.read_text()
    assert _Unauthorized.hits == []  # no network either
    env = {**os.environ, **WHO, **home, **rig.env, "GIT_TERMINAL_PROMPT": "0"}
    await anyio.run_process(control, cwd=rig.repo, env=env, check=False)
    assert rig.mark.exists(), "the control: plain git runs the planted program"


# --- the repository the session found at start ------------------------------------------------


def test_a_root_in_no_repository_stays_so(tmp_path: Path) -> None:
    """A `.git` that appears later is not tether's: no git runs there, every file is work."""
    rig = _rig(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("mine\n")
    repositories = Repositories()
    assert repositories.find(plain) is None
    rig.git("init", "-q", cwd=plain)
    rig.git("add", "-A", cwd=plain)
    rig.config("core.fsmonitor", rig.program, plain / ".git" / "config")
    assert find_repository(plain) is not None  # a new session would see one
    assert repositories.find(plain) is None  # this one does not
    work = protect.uncommitted_work(plain, repositories.find(plain))
    assert plain / "notes.txt" in work.paths and not rig.mark.exists()


def test_a_subfolder_keeps_its_repository(tmp_path: Path) -> None:
    """A `.git` planted in a project that is a subfolder of a repository is never read."""
    rig = _rig(tmp_path)
    sub = rig.repo / "src"
    repositories = Repositories()
    found = repositories.find(sub)
    assert found is not None and (found.top, found.git_dir) == (rig.repo, rig.repo / ".git")
    rig.git("init", "-q", cwd=sub)
    rig.git("add", "-A", cwd=sub)
    rig.config("core.fsmonitor", rig.program, sub / ".git" / "config")
    assert repositories.find(sub) is found
    status = found.git("status", "--porcelain=v1", cwd=sub, timeout=30).text()
    assert " M changed.txt" in status  # the outer repository's view, from the subfolder
    assert not rig.mark.exists()


async def test_a_replaced_repository_is_refused(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    repo = Repositories().find(rig.repo)
    assert repo is not None
    (rig.repo / ".git").rename(rig.repo / ".git-was")
    rig.git("init", "-q")
    with pytest.raises(RepositoryChanged):
        repo.git("status", timeout=30)
    with pytest.raises(RepositoryChanged):
        await repo.agit("status", timeout=30)
    work = protect.uncommitted_work(rig.repo, repo)
    assert work.problem is not None and "no longer the one" in work.problem
    assert work.paths == (rig.repo / ".git",)  # the place of the repository stays protected


async def test_only_reading_runs(tmp_path: Path) -> None:
    """Read-only subcommands, none of their options that write or undo the runner's."""
    repo = find_repository(_rig(tmp_path).repo)
    assert repo is not None
    refused = (
        ("merge", "x"),
        ("checkout", "."),
        ("fetch",),
        ("-c", "a.b=c", "status"),
        (),
        ("config", "core.fsmonitor", "x"),
        ("config",),
        ("branch", "-D", "main"),
        ("branch", "new"),
        ("diff", "--ext-diff"),
        ("diff", "--textconv", "--", "."),
        ("diff", "--submodule=diff"),
        ("diff", "--output=x"),
        ("log", "--show-signature"),
        ("status", "--ignore-submodules=none"),
    )
    for args in refused:
        with pytest.raises(GitRefused):
            repo.git(*args, timeout=30)
        with pytest.raises(GitRefused):
            await repo.agit(*args, timeout=30)


async def test_output_is_bounded(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    (rig.repo / "changed.txt").write_text("line\n" * 50_000)
    repo = find_repository(rig.repo)
    assert repo is not None
    out = await repo.agit("diff", timeout=30, limit=1000)
    assert out.truncated and len(out.stdout) == 1000


def test_a_config_with_too_many_filters_is_refused(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    text = "".join(f'[filter "f{i}"]\n\tclean = {rig.program}\n' for i in range(600))
    with (rig.repo / ".git" / "config").open("a") as f:
        f.write(text)
    repo = find_repository(rig.repo)
    assert repo is not None
    with pytest.raises(GitRefused):
        repo.git("status", timeout=30)


def test_a_submodule_is_protected_whole(tmp_path: Path) -> None:
    """tether's git does not look inside a submodule, so uncommitted work there cannot be told
    from the rest: the whole submodule is protected, whether it shows changes or not."""
    rig = _rig(tmp_path)
    submodule(rig)  # (its planted filter aside)
    repo = find_repository(rig.repo)
    assert repo is not None
    assert repo.submodules(30) == (rig.repo / "sub",)
    (rig.repo / "sub" / "s.txt").write_text("uncommitted, inside the submodule\n")
    work = protect.uncommitted_work(rig.repo, repo)
    assert rig.repo / "sub" in work.paths and work.problem is None
    assert protect.uncommitted_work(rig.repo / "sub", repo).paths == (rig.repo / "sub",)
    assert not rig.mark.exists()


async def test_git_is_never_taken_from_a_session_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tether's PATH leads into another of the session's roots, where a `git` is planted."""
    rig = _rig(tmp_path)
    other = tmp_path / "other"
    (other / "bin").mkdir(parents=True)
    shutil.copy(rig.program, other / "bin" / "git")
    monkeypatch.setenv("PATH", f"{other / 'bin'}{os.pathsep}{os.environ['PATH']}")
    repositories = Repositories()
    assert repositories.find(other) is None
    repo = repositories.find(rig.repo)
    assert repo is not None
    assert " M changed.txt" in repo.git("status", "--short", timeout=30).text()
    assert "## main" in (await repo.agit("status", "--short", "--branch", timeout=30)).text()
    assert not rig.mark.exists()
