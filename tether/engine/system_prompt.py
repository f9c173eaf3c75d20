"""The system prompt: who the agent is, the project it works in, and how its tools behave.

The project part (directory, platform, date, git branch and status, instruction files) is a
snapshot taken once per session, at its first prompt, and stored with the session: the request
prefix then stays byte-identical from round to round and turn to turn, which is what providers'
prompt caches key on. The mode goes last, so switching it keeps the rest of the prefix.
Sections the composition root passes (the web tools' guidance) follow the tool rules; they are
fixed for the process, so they do not move the prefix either.
"""

from __future__ import annotations

import platform
from datetime import date
from pathlib import Path

import anyio

from tether.engine.instruction_files import read_all
from tether.engine.vcs.repository import Repository
from tether.errors import TetherError

PERSONA = (
    "You are tether, a coding agent working in the user's project through tools. Read before "
    "you edit, keep changes small and focused, and say what you changed. Prefer the project's "
    "own conventions, tools and tests."
)

TOOL_RULES = """\
# How tools and approvals work
- Paths are relative to the working directory. Tools cannot reach outside it (and the \
directories the user added); do not try to work around that.
- Calls that change files or run commands may need the user's approval. Several calls in one \
reply are approved together in one request. A rejected or cancelled call's result says so: do \
not repeat it unchanged; adapt, or ask the user what they want instead.
- `write_file` creates files; replacing an existing file needs `overwrite: true` (and the user \
sees the diff). Read a file before you replace it.
- Commands run without a shell: `run_argv` takes the program and each argument as a list. \
Run the command itself, not `bash -c` / `python -c`; use `run_argv_batch` for ordered steps \
and pipes, `open_pty` for interactive programs. Commands run in a sandbox where there is one: \
they write only in the project (never its uncommitted files or .git) and a private $TMPDIR, and \
reach no network unless the session allows it. When the sandbox is what stops a command, call \
it again with `unconfined: true` and a `reason` (the user decides). Some commands (sudo, \
rm -rf /, dd, shutdown, ...) are refused outright: do not look for a way around.
- For work with several steps, keep a todo stack (`todo_push`, `todo_update`, `todo_pop`): \
the user sees it as your plan.
- A tool result that was too long is cut; it says where the full text was saved (read it with \
`read_file` when you need more)."""

GIT_TIMEOUT = 3.0  # seconds; a huge repository must not hold up the first prompt
GIT_STATUS_LINES = 20


async def project_context(
    cwd: Path, repo: Repository | None, extra: tuple[str, ...] = ()
) -> tuple[str, list[str]]:
    """The session's snapshot of its project, as the system prompt's middle part, and the
    instruction files read into it (instruction_files.py: the user's, then the project's from
    its root down to `cwd`, then `extra`, the files `[agent] instructions` adds); `repo`: the
    repository the session found `cwd` in (engine/vcs/: git runs hardened, on that one only).
    The git summary and the instruction files are read at once: a first prompt sent with
    `session/new` waits on them."""
    found: dict[str, str] = {}
    files: list[str] = []
    top = repo.top if repo is not None else None

    async def git() -> None:
        found["git"] = await _git_summary(repo, cwd)

    async def instructions() -> None:
        text, names = await anyio.to_thread.run_sync(read_all, cwd, top, extra)
        found["instructions"] = text
        files.extend(names)

    async with anyio.create_task_group() as tg:
        tg.start_soon(git)
        tg.start_soon(instructions)
    lines = [
        "# Environment",
        f"- Working directory: {cwd}",
        f"- Platform: {platform.system()} {platform.release()} ({platform.machine()})",
        f"- Today's date: {date.today().isoformat()}",
        f"- Git: {found['git']}",
        "(The git status is a snapshot from the start of this session.)",
    ]
    text = found["instructions"]
    return "\n".join(lines) + (f"\n\n{text}" if text else ""), files


def system_prompt(
    persona: str,
    context: str,
    mode: str,
    mode_text: str,
    sections: tuple[str, ...] = (),
    mcp: str = "",
    skills: str = "",
    tool_rules: str | None = None,
) -> str:
    """The whole system prompt; `persona`, `context` and the `sections` (the guidance of the
    enabled tools, after the tool rules) are stable, then `skills` (the catalog of Agent
    Skills, found at the turn's start), `mcp` (the session's connected MCP servers'
    instructions), and the mode comes last. `tool_rules`: the configured tool directives in
    place of tether's own."""
    mode_line = f"# Mode\nThe session is in `{mode}` mode: {mode_text}."
    rules = TOOL_RULES if tool_rules is None else tool_rules  # "" leaves them out
    parts = (persona, context, rules, *sections, skills, mcp, mode_line)
    return "\n\n".join(p for p in parts if p)


async def _git(repo: Repository, cwd: Path, *args: str) -> str | None:
    try:
        done = await repo.agit(*args, cwd=cwd, timeout=GIT_TIMEOUT)
    except (OSError, TimeoutError, TetherError):
        return None
    if done.code != 0:
        return None
    return done.text().rstrip()


async def _git_summary(repo: Repository | None, cwd: Path) -> str:
    """The branch and the changed paths, from one `git status` (a git process costs a few
    milliseconds; a detached HEAD takes a second one, for its commit)."""
    if repo is None:
        return "not a git repository"
    status = await _git(
        repo, cwd, "status", "--porcelain=v1", "--branch", "--untracked-files=normal"
    )
    if status is None:
        return "not a git repository"
    head, *entries = status.splitlines() or [""]
    branch = _branch(head)
    if branch is None:
        commit = await _git(repo, cwd, "rev-parse", "--short", "HEAD")
        branch = f"(detached at {commit or 'nothing'})"
    if not entries:
        return f"branch {branch}, clean"
    shown = "\n".join(f"  {e}" for e in entries[:GIT_STATUS_LINES])
    more = len(entries) - GIT_STATUS_LINES
    tail = f"\n  ... and {more} more" if more > 0 else ""
    return f"branch {branch}, {len(entries)} changed paths:\n{shown}{tail}"


def _branch(head: str) -> str | None:
    """The branch of `git status --branch`'s first line (`## main...origin/main [ahead 1]`,
    `## No commits yet on main`); None for a detached HEAD (`## HEAD (no branch)`)."""
    text = head.removeprefix("## ")
    if text.startswith("HEAD (no branch)"):
        return None
    if text.startswith(("No commits yet on ", "Initial commit on ")):
        return text.rsplit(" ", 1)[-1]
    return text.split("...", 1)[0].split(" ", 1)[0]
