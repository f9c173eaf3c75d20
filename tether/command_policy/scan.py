"""Which programs a command line runs: past wrappers (`env`, `nohup`, `timeout`, `xargs`,
`uv run`, ...: wrappers.py), shell one-liners (`sh -c '...'`), remote hops (`ssh host cmd`),
`find -exec`, and git aliases and settings that run programs.

Pure functions: the denylist (command_policy/denylist.py) and the danger classification
(command_policy/danger.py) judge what this finds.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

import msgspec

from tether.command_policy.shell_script import simple_command, split_script, substitutions
from tether.command_policy.words import (
    Spec,
    long_options,
    parse_options,
    program_name,
    shell_join,
)
from tether.command_policy.wrappers import (
    REMOTE_CLIENTS,
    SHELLS,
    Finding,
    shell_options,
    unwrap,
    wrapper_key,
)

MAX_DEPTH = 8  # nested wrappers / shells / hops; deeper is reviewed, not followed


class Invocation(msgspec.Struct, frozen=True):
    """One program a command line runs, with its own arguments (argv[0] included)."""

    argv: tuple[str, ...]
    via: tuple[str, ...] = ()  # the programs in front of it, outermost first
    remote: str | None = None  # the host it runs on, behind ssh / mosh

    @property
    def program(self) -> str:
        return program_name(self.argv[0]) if self.argv else ""

    @property
    def args(self) -> tuple[str, ...]:
        return self.argv[1:]


class Scan(msgspec.Struct):
    """What a command line runs: each program, in the order met (a wrapper before what it
    runs), and what the user should review."""

    invocations: list[Invocation] = msgspec.field(default_factory=list[Invocation])
    findings: list[Finding] = msgspec.field(default_factory=list[Finding])
    # The environment the programs may see: the caller's, plus every assignment the command
    # line makes (`env NAME=VALUE`, `NAME=VALUE cmd` in a script). Over-approximated on
    # purpose: it decides what a `git` alias may expand to.
    env: dict[str, str] = msgspec.field(default_factory=dict[str, str])


def scan(argv: Sequence[str], env: Mapping[str, str] | None = None) -> Scan:
    """`env`: the variables the command is given (`run_argv`'s `env`), which may configure
    the programs it runs (`GIT_CONFIG_*`)."""
    out = Scan(env=dict(env or {}))
    _scan_argv(tuple(argv), (), None, 0, out)
    return out


# --- the scan ------------------------------------------------------------------------------


def _scan_argv(
    argv: tuple[str, ...], via: tuple[str, ...], remote: str | None, depth: int, out: Scan
) -> None:
    if not argv:
        return
    if depth > MAX_DEPTH:
        out.findings.append(Finding(f"nested too deeply to follow: {shell_join(argv)}"))
        return
    inv = Invocation(argv, via, remote)
    out.invocations.append(inv)
    prog = inv.program
    if prog.startswith("$"):
        out.findings.append(
            Finding(f"the program is chosen at run time ({argv[0]}); it cannot be checked")
        )
        return
    key = wrapper_key(argv)
    if key is not None:
        _unwrap(argv, key, via, remote, depth, out)
    elif prog in SHELLS:
        _shell(argv, via, remote, depth, out)
    elif prog in REMOTE_CLIENTS:
        _remote(argv, via, depth, out)
    elif prog in ("eval", "watch"):
        text = " ".join(_watch_command(argv) if prog == "watch" else argv[1:])
        _scan_script(text, (*via, prog), remote, depth + 1, out)
    elif prog == "find":
        _find_exec(argv, via, remote, depth, out)
    elif prog == "git":
        _git_config(argv, via, remote, depth, out)


def _unwrap(
    argv: tuple[str, ...],
    key: str,
    via: tuple[str, ...],
    remote: str | None,
    depth: int,
    out: Scan,
) -> None:
    found = unwrap(argv, key)
    out.findings.extend(found.findings)
    out.env.update(found.env)
    inner_via = (*via, found.label)
    if found.script is not None:
        _scan_script(found.script, inner_via, remote, depth + 1, out)
    elif found.inner is not None:
        _scan_argv(found.inner, inner_via, remote, depth + 1, out)


def _shell(
    argv: tuple[str, ...], via: tuple[str, ...], remote: str | None, depth: int, out: Scan
) -> None:
    parsed, has_c = shell_options(argv)
    if parsed.unknown is not None:
        out.findings.append(
            Finding(f"options not understood by {program_name(argv[0])}: {parsed.unknown}")
        )
        return
    operands = argv[1 + parsed.rest :]
    if has_c and operands:
        _scan_script(operands[0], (*via, program_name(argv[0])), remote, depth + 1, out)


def _remote(argv: tuple[str, ...], via: tuple[str, ...], depth: int, out: Scan) -> None:
    prog = program_name(argv[0])
    spec = REMOTE_CLIENTS[prog]
    parsed = parse_options(spec, argv[1:])
    words = list(argv[1 + parsed.rest :])
    host = words.pop(0) if words and parsed.unknown is None else None
    if host is not None and words and words[0].startswith("-") and words[0] != "--":
        more = parse_options(spec, words)  # ssh reads options after the destination too
        parsed.seen.extend(more.seen)
        parsed.unknown = more.unknown
        words = words[more.rest :]
    if parsed.unknown is not None:
        out.findings.append(
            Finding(f"options not understood by {prog}: {parsed.unknown}; the command is a guess")
        )
        return
    if any(
        n == "-o" and (v or "").replace(" ", "").lower() == "batchmode=yes" for n, v in parsed.seen
    ):
        out.findings.append(Finding(f"{prog} -o BatchMode=yes: nothing on either end can prompt"))
    if host is None:
        out.findings.append(Finding(f"{prog} has no destination"))
        return
    if words and words[0] == "--":
        words.pop(0)
    if not words:
        if not any(name in ("-N", "-W") for name, _ in parsed.seen):  # forwarding only
            out.findings.append(
                Finding(
                    f"remote shell on {host!r} ({prog} with no command; its input is not checked)"
                )
            )
        return
    # ssh joins the words with spaces and hands the line to the remote user's shell.
    _scan_script(" ".join(words), (*via, f"{prog} {host}"), host, depth + 1, out)


def _watch_command(argv: tuple[str, ...]) -> list[str]:
    spec = Spec(
        flags="bcdegtxpr",
        values="nq",
        long_flags=long_options(
            "beep color no-color errexit chgexit no-title exec precise no-rerun no-wrap"
        ),
        long_values=long_options("interval equexit"),
        long_optional=long_options("differences"),
    )
    parsed = parse_options(spec, argv[1:])
    return list(argv[1 + parsed.rest :])


def _find_exec(
    argv: tuple[str, ...], via: tuple[str, ...], remote: str | None, depth: int, out: Scan
) -> None:
    i = 1
    while i < len(argv):
        if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(argv) and argv[j] not in (";", "+"):
                j += 1
            _scan_argv(tuple(argv[i + 1 : j]), (*via, "find"), remote, depth + 1, out)
            i = j
        i += 1


# --- git: aliases and configuration that run programs ----------------------------------------

GIT_OPTIONS = Spec(
    flags="pP",
    values="Cc",
    long_flags=frozenset(
        {"--no-pager", "--paginate", "--bare", "--no-replace-objects", "--literal-pathspecs"}
    ),
    long_values=frozenset({"--git-dir", "--work-tree", "--namespace", "--config-env"}),
    long_optional=frozenset({"--exec-path"}),
)
# Configuration keys whose value git runs as a command (`core.pager`, `diff.x.textconv`, ...).
_GIT_RUNS = re.compile(
    r"(^core\.(pager|editor|sshcommand|fsmonitor|gitproxy|askpass|hookspath)$)|"
    r"(^(sequence\.editor|diff\.external|gpg\.program|gpg\.\w+\.program|credential\.helper)$)|"
    r"(\.(textconv|command|driver|clean|smudge|process|helper|cmd|tool|program|path)$)"
)


def git_config(argv: Sequence[str], env: Mapping[str, str]) -> list[tuple[str, str]]:
    """The (key, value) settings a git command line gives itself: `-c key=value`,
    `--config-env=key=VAR`, `GIT_CONFIG_COUNT` / `GIT_CONFIG_KEY_n` / `GIT_CONFIG_VALUE_n`
    and `GIT_CONFIG_PARAMETERS` from its environment. Keys in lower case."""
    found: list[tuple[str, str]] = []
    parsed = parse_options(GIT_OPTIONS, list(argv[1:]))
    for name, value in parsed.seen:
        if name == "-c" and value is not None:
            key, _, val = value.partition("=")
            found.append((key.lower(), val))
        elif name == "--config-env" and value is not None:
            key, _, var = value.partition("=")
            found.append((key.lower(), env.get(var, "")))
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    except ValueError:
        count = 0
    for i in range(min(count, 100)):
        found.append(
            (env.get(f"GIT_CONFIG_KEY_{i}", "").lower(), env.get(f"GIT_CONFIG_VALUE_{i}", ""))
        )
    params = env.get("GIT_CONFIG_PARAMETERS", "")
    for item in re.findall(r"'([^']*)'(?:=\s*'([^']*)')?", params):
        key, _, val = item[0].partition("=")
        found.append((key.lower(), item[1] or val))
    return found


def _git_config(
    argv: tuple[str, ...], via: tuple[str, ...], remote: str | None, depth: int, out: Scan
) -> None:
    """What git runs because of its own settings: an alias (`git -c alias.p='push -f' p`,
    `!...` a shell command) and configured programs (`-c core.pager=...`)."""
    settings = git_config(argv, out.env)
    if not settings:
        return
    parsed = parse_options(GIT_OPTIONS, list(argv[1:]))
    rest = list(argv[1 + parsed.rest :])
    here = (*via, "git")
    for key, value in settings:
        if _GIT_RUNS.search(key) and value:
            out.findings.append(Finding(f"git -c {key} runs a command", f"git {key}: {value}"))
            _scan_script(value.lstrip("!"), here, remote, depth + 1, out)
    if not rest or parsed.unknown is not None:
        return
    aliases = {k.removeprefix("alias."): v for k, v in settings if k.startswith("alias.")}
    alias = aliases.get(rest[0].lower())
    if alias is None:
        return
    out.findings.append(Finding(f"git {rest[0]} is an alias", f"git alias {rest[0]}: {alias}"))
    if alias.startswith("!"):
        _scan_script(f"{alias[1:]} {shlex.join(rest[1:])}", here, remote, depth + 1, out)
        return
    try:
        words = shlex.split(alias)
    except ValueError:
        out.findings.append(Finding(f"git alias {rest[0]}: its words cannot be parsed"))
        return
    head = argv[: 1 + parsed.rest]
    _scan_argv((*head, *words, *rest[1:]), via, remote, depth + 1, out)


# --- shell scripts -------------------------------------------------------------------------


def _scan_script(
    script: str, via: tuple[str, ...], remote: str | None, depth: int, out: Scan
) -> None:
    if depth > MAX_DEPTH:
        out.findings.append(Finding("shell code nested too deeply to follow"))
        return
    try:
        commands = split_script(script)
    except ValueError:
        out.findings.append(Finding("the shell code's quoting does not parse; it was not checked"))
        # Still look at every word run, so a denylisted program cannot hide behind a quote.
        commands = [simple_command(part.split()) for part in re.split(r"[;&|()\n`]+", script)]
    for name, value in re.findall(r"(?:^|[\s;&|(])([A-Za-z_][A-Za-z0-9_]*)=(\S*)", script):
        out.env[name] = value.strip("'\"")
    for words in commands:
        for word in words:
            for inner in substitutions(word):
                _scan_script(inner, via, remote, depth + 1, out)
        _scan_argv(tuple(words), via, remote, depth, out)
