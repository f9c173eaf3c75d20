"""Which programs a command line runs: past wrappers (`env`, `nohup`, `timeout`, `xargs`,
`uv run`, ...), shell one-liners (`sh -c '...'`), remote hops (`ssh host cmd`) and `find -exec`.

Every wrapper's options are spelled as a getopt-like spec, flags as well as options that take a
value, so no option swallows the program. An option a spec does not know stops the unwrap: the
wrapper stays the last program known for sure, and the scan records a finding for the user to
review. Pure functions; `command_policy.py` judges what this finds.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

MAX_DEPTH = 8  # nested wrappers / shells / hops; deeper is reviewed, not followed


@dataclass(frozen=True)
class Invocation:
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


@dataclass(frozen=True)
class Finding:
    """Something the user should look at: code carried in an argument, a detached runner, an
    option nobody understood. `preview` is the carried text, labelled (`env -S: ...`)."""

    text: str
    preview: str = ""


@dataclass
class Scan:
    invocations: list[Invocation] = field(default_factory=list[Invocation])
    findings: list[Finding] = field(default_factory=list[Finding])
    # The environment the programs may see: the caller's, plus every assignment the command
    # line makes (`env NAME=VALUE`, `NAME=VALUE cmd` in a script). Over-approximated on
    # purpose: it decides what a `git` alias may expand to.
    env: dict[str, str] = field(default_factory=dict[str, str])


def program_name(word: str) -> str:
    """A program as the denylist and the grants know it: basename, lower case, no `.exe`."""
    name = re.split(r"[\\/]", word)[-1].lower()
    for suffix in (".exe", ".cmd", ".bat", ".com"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def shell_join(argv: Sequence[str]) -> str:
    """The command line as a POSIX shell would need it typed (what the user is shown)."""
    return shlex.join(argv)


def scan(argv: Sequence[str], env: Mapping[str, str] | None = None) -> Scan:
    """`env`: the variables the command is given (`run_argv`'s `env`), which may configure
    the programs it runs (`GIT_CONFIG_*`)."""
    out = Scan(env=dict(env or {}))
    _scan_argv(tuple(argv), (), None, 0, out)
    return out


def scan_script(script: str, *, remote: str | None = None) -> Scan:
    """The programs of a shell script (`sh -c` text, a remote command line)."""
    out = Scan()
    _scan_script(script, (), remote, 0, out)
    return out


# --- getopt-like specs ---------------------------------------------------------------------

Carry = Literal["split", "shell"]  # `env -S` splits its value into words; `su -c` runs a shell


@dataclass(frozen=True)
class Spec:
    flags: str = ""  # short options without a value
    values: str = ""  # short options taking a value (attached or the next word)
    attached: str = ""  # short options whose value can only be attached (`xargs -i{}`)
    long_flags: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    long_optional: frozenset[str] = frozenset()  # a value only when attached with `=`
    words: frozenset[str] = frozenset()  # whole words that are options (`env -`)
    numeric: bool = False  # `-N` is an option (`nice -10`)
    operands: int = 0  # words between the options and the program (`timeout DURATION`)
    assignments: bool = False  # NAME=VALUE words before the program (`env`)
    carries: tuple[tuple[str, Carry], ...] = ()  # options whose value is a command line
    no_program: frozenset[str] = frozenset()  # options after which nothing runs (`command -v`)
    detached: bool = False  # the program outlives the command (`nohup`, `setsid`)
    default: tuple[str, ...] = ()  # what runs when no program is given (`xargs` -> echo)
    module: frozenset[str] = frozenset()  # `uv run -m mod`: runs `python -m mod`
    plus: bool = False  # `+x` clusters are options too (shells)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _long(names: str) -> frozenset[str]:
    return frozenset(f"--{n}" for n in names.split())


_UV_RUN = Spec(
    flags="qvUm",
    values="pifCP",
    long_flags=_long(
        "module no-sync frozen locked isolated all-extras no-dev dev no-project exact active "
        "no-active offline no-cache no-editable all-packages all-groups no-default-groups "
        "script gui-script no-env-file quiet verbose native-tls preview no-config refresh "
        "reinstall upgrade compile-bytecode no-build-isolation no-progress only-dev"
    ),
    long_values=_long(
        "with with-editable with-requirements python directory project package extra group "
        "only-group no-group env-file index default-index index-url extra-index-url "
        "find-links config-file cache-dir color resolution prerelease python-preference "
        "link-mode exclude-newer refresh-package reinstall-package upgrade-package "
        "config-setting no-binary-package no-build-package"
    ),
    module=frozenset({"-m", "--module"}),
)
_NPX = Spec(
    flags="yq",
    values="p",
    long_flags=_long("yes no quiet ignore-existing"),
    long_values=_long("package call shell"),
    carries=(("-c", "shell"), ("--call", "shell")),
)
_CONDA_RUN = Spec(
    values="np",
    long_flags=_long("no-capture-output live-stream debug-wrapper-scripts"),
    long_values=_long("name prefix cwd"),
)
_PLAIN_RUN = Spec(flags="qv", long_flags=_long("quiet verbose no-interaction"))

# Programs that run another program. Keyed by program name, or "name subcommand" for launchers.
WRAPPERS: dict[str, Spec] = {
    "env": Spec(
        flags="i0v",
        values="uCS",
        long_flags=_long("ignore-environment null debug list-signal-handling"),
        long_values=_long("unset chdir split-string"),
        long_optional=_long("block-signal default-signal ignore-signal"),
        words=frozenset({"-"}),
        assignments=True,
        carries=(("-S", "split"), ("--split-string", "split")),
    ),
    "nohup": Spec(detached=True),
    "setsid": Spec(flags="cfw", long_flags=_long("ctty fork wait"), detached=True),
    "timeout": Spec(
        flags="fpv",
        values="ks",
        long_flags=_long("foreground preserve-status verbose"),
        long_values=_long("kill-after signal"),
        operands=1,
    ),
    "nice": Spec(values="n", long_values=_long("adjustment"), numeric=True),
    "ionice": Spec(flags="t", values="cnpPu", no_program=frozenset({"-p", "-P", "-u"})),
    "stdbuf": Spec(values="ioe", long_values=_long("input output error")),
    "time": Spec(
        flags="pvaq",
        values="of",
        long_flags=_long("portability verbose append quiet"),
        long_values=_long("output format"),
    ),
    "chrt": Spec(
        flags="abdefiorRv",
        values="TPD",
        operands=1,
        no_program=frozenset({"-p", "-m"}),
    ),
    "taskset": Spec(flags="ac", operands=1, no_program=frozenset({"-p"})),
    "xargs": Spec(
        flags="0rtpxo",
        values="adEILnPs",
        attached="eil",
        long_flags=_long("null no-run-if-empty verbose interactive exit open-tty"),
        long_values=_long("arg-file delimiter max-args max-procs max-chars process-slot-var"),
        long_optional=_long("max-lines replace eof"),
        default=("echo",),
    ),
    "flock": Spec(
        flags="sexunoFv",
        values="wE",
        long_flags=_long("shared exclusive unlock nonblock close no-fork"),
        long_values=_long("timeout conflict-exit-code command"),
        operands=1,
        carries=(("-c", "shell"), ("--command", "shell")),
    ),
    "busybox": Spec(),
    "builtin": Spec(),
    "exec": Spec(flags="cl", values="a"),
    "command": Spec(flags="p", no_program=frozenset({"-v", "-V"})),
    "caffeinate": Spec(flags="dimsu", values="tw"),
    "unbuffer": Spec(flags="p"),
    "strace": Spec(flags="cCdDfFhiqrtTvVxyZwk", values="abeEIopPsSuXU"),
    "ltrace": Spec(flags="bcCdfhiLrStTV", values="aAeFlnopsuwxD"),
    "uv run": _UV_RUN,
    "uv tool run": _UV_RUN,
    "uvx": _UV_RUN,
    "poetry run": _PLAIN_RUN,
    "pipenv run": Spec(),
    "pdm run": _PLAIN_RUN,
    "hatch run": Spec(),
    "rye run": Spec(),
    "conda run": _CONDA_RUN,
    "mamba run": _CONDA_RUN,
    "micromamba run": _CONDA_RUN,
    "npx": _NPX,
    "npm exec": _NPX,
    "pnpm exec": Spec(flags="rc", long_flags=_long("recursive parallel")),
    "pnpm dlx": Spec(long_values=_long("package")),
    "yarn exec": Spec(),
    "yarn dlx": Spec(values="p", long_values=_long("package")),
    "bunx": Spec(long_flags=_long("bun")),
    "bun x": Spec(long_flags=_long("bun")),
    "mise exec": Spec(values="C", long_values=_long("cd")),
    "nix-shell": Spec(
        flags="",
        long_flags=_long("pure impure"),
        long_values=_long("packages attr"),
        values="pA",
        carries=(("--run", "shell"), ("--command", "shell")),
    ),
}
_LAUNCHERS = {key.split()[0] for key in WRAPPERS if " " in key}

SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "csh", "tcsh"}
)
_SHELL = Spec(
    flags="abCcefhiklmnprstuvxBDEHPT",
    values="oO",
    plus=True,
    long_flags=_long(
        "norc noprofile login posix restricted noediting verbose debugger no-rcs interactive "
        "private"
    ),
    long_values=_long("rcfile init-file"),
)
_SSH = Spec(flags="46AaCfGgKkMNnqsTtVvXxYy", values="BbcDEeFIiJLlmOoPpQRSWw")
_MOSH = Spec(
    flags="an46",
    values="p",
    long_flags=_long("local no-init no-ssh-pty ssh-pty"),
    long_values=_long(
        "client server ssh predict family port bind-server experimental-remote-ip predict-overwrite"
    ),
)
REMOTE_CLIENTS = frozenset({"ssh", "mosh"})


@dataclass
class Parsed:
    """A wrapper's arguments read through its spec."""

    rest: int = 0  # index of the first word after the options (and operands)
    seen: list[tuple[str, str | None]] = field(default_factory=list[tuple[str, str | None]])
    unknown: str | None = None  # the first option the spec does not know
    missing_value: str | None = None


def parse_options(spec: Spec, args: Sequence[str]) -> Parsed:
    """Read options up to the first non-option word (getopt with a leading `+`: no
    permutation, which is what every wrapper does)."""
    p = Parsed()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a in spec.words:
            p.seen.append((a, None))
            i += 1
        elif a.startswith("--") and len(a) > 2:
            i = _long_option(spec, args, i, p)
        elif (a.startswith("-") or (spec.plus and a.startswith("+"))) and len(a) > 1:
            i = _short_cluster(spec, args, i, p)
        else:
            break
        if p.unknown or p.missing_value:
            p.rest = i
            return p
    p.rest = i
    return p


def _long_option(spec: Spec, args: Sequence[str], i: int, p: Parsed) -> int:
    name, eq, value = args[i].partition("=")
    if (name in spec.long_flags and not eq) or name in spec.long_optional:
        p.seen.append((name, value if eq else None))
        return i + 1
    if name in spec.long_values:
        if eq:
            p.seen.append((name, value))
            return i + 1
        if i + 1 >= len(args):
            p.missing_value = name
            return i + 1
        p.seen.append((name, args[i + 1]))
        return i + 2
    p.unknown = args[i]
    return i


def _short_cluster(spec: Spec, args: Sequence[str], i: int, p: Parsed) -> int:
    a = args[i]
    if spec.numeric and a[1:].lstrip("+-").isdigit():
        p.seen.append((a, None))
        return i + 1
    j = 1
    while j < len(a):
        c = a[j]
        if c in spec.attached:
            p.seen.append((f"-{c}", a[j + 1 :] or None))
            return i + 1
        if c in spec.values:
            if a[j + 1 :]:
                p.seen.append((f"-{c}", a[j + 1 :]))
                return i + 1
            if i + 1 >= len(args):
                p.missing_value = f"-{c}"
                return i + 1
            p.seen.append((f"-{c}", args[i + 1]))
            return i + 2
        if c in spec.flags:
            p.seen.append((f"{a[0]}{c}", None))
            j += 1
            continue
        p.unknown = a if j == 1 else f"-{c} (in {a})"
        return i
    return i + 1


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


def wrapper_key(argv: tuple[str, ...]) -> str | None:
    prog = program_name(argv[0])
    if prog in _LAUNCHERS:
        words = [prog, *[w for w in argv[1:3]]]
        for n in (3, 2):
            key = " ".join(words[:n])
            if key in WRAPPERS:
                return key
        return None
    return prog if prog in WRAPPERS else None


@dataclass
class Unwrapped:
    """What a wrapper runs: a command line (`inner`), or shell code it carries (`script`);
    neither when it runs nothing or its options were not understood."""

    label: str
    inner: tuple[str, ...] | None = None
    script: str | None = None
    findings: list[Finding] = field(default_factory=list[Finding])
    env: dict[str, str] = field(default_factory=dict[str, str])  # NAME=VALUE it sets


def unwrap(argv: tuple[str, ...], key: str) -> Unwrapped:
    spec = WRAPPERS[key]
    skip = len(key.split())
    out = Unwrapped(" ".join(argv[:skip]))
    label, args = out.label, argv[skip:]
    parsed = parse_options(spec, args)
    if parsed.unknown is not None:
        guess = shell_join(args[parsed.rest :]) or "(none)"
        out.findings.append(
            Finding(
                f"options not understood by {label}: {parsed.unknown}; "
                f"the wrapped program is a guess: {guess}"
            )
        )
        return out
    if parsed.missing_value is not None:
        out.findings.append(Finding(f"{label} {parsed.missing_value} is missing its value"))
        return out
    names = {name for name, _ in parsed.seen}
    if spec.detached:
        text = f"{label} detaches the command: it may keep running after this turn"
        out.findings.append(Finding(text))
    if names & spec.no_program:
        return out
    rest = list(args[parsed.rest :])
    carries = dict(spec.carries)
    for opt, value in parsed.seen:
        if carries.get(opt) is None or value is None:
            continue
        out.findings.append(
            Finding(f"{label} {opt} carries a command line", f"{label} {opt}: {value}")
        )
        if carries[opt] == "shell":
            out.script = value
            return out
        try:
            rest = [*shlex.split(value), *rest]
        except ValueError:
            out.findings.append(Finding(f"{label} {opt}: the command line cannot be parsed"))
            return out
    rest = rest[spec.operands :]
    if len(rest) > 1 and carries.get(rest[0]) == "shell":  # `flock FILE -c 'command'`
        out.findings.append(
            Finding(f"{label} {rest[0]} carries a command line", f"{label} {rest[0]}: {rest[1]}")
        )
        out.script = rest[1]
        return out
    if spec.assignments:
        while rest and _ASSIGNMENT.match(rest[0]):
            name, _, value = rest.pop(0).partition("=")
            out.env[name.rstrip("+")] = value
    if names & spec.module and rest:
        rest = ["python", "-m", *rest]
    out.inner = tuple(rest) or spec.default
    return out


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


def command_scope(argv: Sequence[str]) -> str:
    """What an "always" answer about this command covers: its program, with the wrappers in
    front of it and the host behind `ssh` (`env pytest`, `uv run pytest`, `ssh prod ls`)."""
    parts: list[str] = []
    current = tuple(argv)
    for _ in range(MAX_DEPTH):
        if not current or not current[0]:
            break
        key = wrapper_key(current)
        if key is None:
            parts.append(program_name(current[0]))
            if program_name(current[0]) in REMOTE_CLIENTS:
                parts.extend(_remote_scope(current))
            break
        parts.append(key)
        inner = unwrap(current, key).inner
        if inner is None:
            break
        current = inner
    return " ".join(parts)


def _remote_scope(argv: tuple[str, ...]) -> list[str]:
    spec = _SSH if program_name(argv[0]) == "ssh" else _MOSH
    parsed = parse_options(spec, argv[1:])
    words = list(argv[1 + parsed.rest :])
    if parsed.unknown is not None or not words:
        return []
    host, rest = words[0], " ".join(words[1:]).split()
    return [host, program_name(rest[0])] if rest else [host]


def shell_options(argv: Sequence[str]) -> tuple[Parsed, bool]:
    """A shell's options, and whether `-c` (the script is the first operand) was given."""
    parsed = parse_options(_SHELL, argv[1:])
    return parsed, any(name == "-c" for name, _ in parsed.seen)


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
    spec = _SSH if prog == "ssh" else _MOSH
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
        long_flags=_long(
            "beep color no-color errexit chgexit no-title exec precise no-rerun no-wrap"
        ),
        long_values=_long("interval equexit"),
        long_optional=_long("differences"),
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

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_KEYWORDS = _words("if then else elif fi do done while until ! { } time coproc esac in")
_SKIP_COMMANDS = frozenset({"for", "case", "select", "function", "[[", "]]", "((", "))"})
_PUNCT = ";&|()<>\n"


def split_script(script: str) -> list[list[str]]:
    """The simple commands of a shell script, as words (operators, redirections, keywords and
    leading assignments removed). Raises ValueError when the quoting does not parse."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=_PUNCT)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # a `#` inside a word must not hide the next line's command
    tokens = list(lexer)
    commands: list[list[str]] = [[]]
    skip_next = False
    for i, token in enumerate(tokens):
        if _is_operator(token):
            is_redirect = ("<" in token or ">" in token) and not ({"(", ")"} & set(token))
            skip_next = is_redirect
            if not is_redirect or set(token) & set(";|\n") or "&&" in token:
                commands.append([])
            continue
        if skip_next:
            skip_next = False
            continue
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token.isdigit() and _is_operator(following) and set(following) & set("<>"):
            continue  # the `2` of `2>&1`
        commands[-1].append(token)
    return [c for c in (_simple(c) for c in commands) if c]


def _is_operator(token: str) -> bool:
    return bool(token) and all(ch in _PUNCT for ch in token)


def _simple(words: list[str]) -> list[str]:
    while words and (words[0] in _KEYWORDS or _ASSIGNMENT.match(words[0])):
        words = words[1:]
    if words and words[0] in _SKIP_COMMANDS:
        return []
    return words


def substitutions(word: str) -> list[str]:
    """The command substitutions inside a word: `$(...)` and backquotes (even quoted ones:
    the scan cannot tell which quotes the shell saw, so it looks at every one)."""
    found: list[str] = []
    i = 0
    while i < len(word):
        if word.startswith("$(", i):
            depth, j = 1, i + 2
            while j < len(word) and depth:
                depth += {"(": 1, ")": -1}.get(word[j], 0)
                j += 1
            found.append(word[i + 2 : j - 1] if depth == 0 else word[i + 2 :])
            i = j
        elif word[i] == "`":
            j = word.find("`", i + 1)
            found.append(word[i + 1 : j] if j > 0 else word[i + 1 :])
            i = len(word) if j < 0 else j + 1
        else:
            i += 1
    return found


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
        commands = [_simple(part.split()) for part in re.split(r"[;&|()\n`]+", script)]
    for name, value in re.findall(r"(?:^|[\s;&|(])([A-Za-z_][A-Za-z0-9_]*)=(\S*)", script):
        out.env[name] = value.strip("'\"")
    for words in commands:
        for word in words:
            for inner in substitutions(word):
                _scan_script(inner, via, remote, depth + 1, out)
        _scan_argv(tuple(words), via, remote, depth, out)
