"""The programs that run another program, as the scan sees through them: wrappers (`env`,
`nohup`, `timeout`, `xargs`, `flock`, `uv run`, `npx`, ...), shells and remote clients, each with
its options spelled as a getopt-like spec, and `unwrap`, which reads what a wrapper runs.

An option a spec does not know stops the unwrap: the wrapper stays the last program known for
sure, and a finding asks the user to review it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import msgspec

from tether.command_policy.shell_script import ASSIGNMENT
from tether.command_policy.words import (
    Parsed,
    Spec,
    long_options,
    parse_options,
    program_name,
    shell_join,
)


class Finding(msgspec.Struct, frozen=True):
    """Something the user should look at: code carried in an argument, a detached runner, an
    option nobody understood. `preview` is the carried text, labelled (`env -S: ...`)."""

    text: str
    preview: str = ""


_UV_RUN = Spec(
    flags="qvUm",
    values="pifCP",
    long_flags=long_options(
        "module no-sync frozen locked isolated all-extras no-dev dev no-project exact active "
        "no-active offline no-cache no-editable all-packages all-groups no-default-groups "
        "script gui-script no-env-file quiet verbose native-tls preview no-config refresh "
        "reinstall upgrade compile-bytecode no-build-isolation no-progress only-dev"
    ),
    long_values=long_options(
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
    long_flags=long_options("yes no quiet ignore-existing"),
    long_values=long_options("package call shell"),
    carries=(("-c", "shell"), ("--call", "shell")),
)
_CONDA_RUN = Spec(
    values="np",
    long_flags=long_options("no-capture-output live-stream debug-wrapper-scripts"),
    long_values=long_options("name prefix cwd"),
)
_PLAIN_RUN = Spec(flags="qv", long_flags=long_options("quiet verbose no-interaction"))

# Programs that run another program. Keyed by program name, or "name subcommand" for launchers.
WRAPPERS: dict[str, Spec] = {
    "env": Spec(
        flags="i0v",
        values="uCS",
        long_flags=long_options("ignore-environment null debug list-signal-handling"),
        long_values=long_options("unset chdir split-string"),
        long_optional=long_options("block-signal default-signal ignore-signal"),
        words=frozenset({"-"}),
        assignments=True,
        carries=(("-S", "split"), ("--split-string", "split")),
    ),
    "nohup": Spec(detached=True),
    "setsid": Spec(flags="cfw", long_flags=long_options("ctty fork wait"), detached=True),
    "timeout": Spec(
        flags="fpv",
        values="ks",
        long_flags=long_options("foreground preserve-status verbose"),
        long_values=long_options("kill-after signal"),
        operands=1,
    ),
    "nice": Spec(values="n", long_values=long_options("adjustment"), numeric=True),
    "ionice": Spec(flags="t", values="cnpPu", no_program=frozenset({"-p", "-P", "-u"})),
    "stdbuf": Spec(values="ioe", long_values=long_options("input output error")),
    "time": Spec(
        flags="pvaq",
        values="of",
        long_flags=long_options("portability verbose append quiet"),
        long_values=long_options("output format"),
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
        long_flags=long_options("null no-run-if-empty verbose interactive exit open-tty"),
        long_values=long_options(
            "arg-file delimiter max-args max-procs max-chars process-slot-var"
        ),
        long_optional=long_options("max-lines replace eof"),
        default=("echo",),
    ),
    "flock": Spec(
        flags="sexunoFv",
        values="wE",
        long_flags=long_options("shared exclusive unlock nonblock close no-fork"),
        long_values=long_options("timeout conflict-exit-code command"),
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
    "pnpm exec": Spec(flags="rc", long_flags=long_options("recursive parallel")),
    "pnpm dlx": Spec(long_values=long_options("package")),
    "yarn exec": Spec(),
    "yarn dlx": Spec(values="p", long_values=long_options("package")),
    "bunx": Spec(long_flags=long_options("bun")),
    "bun x": Spec(long_flags=long_options("bun")),
    "mise exec": Spec(values="C", long_values=long_options("cd")),
    "nix-shell": Spec(
        flags="",
        long_flags=long_options("pure impure"),
        long_values=long_options("packages attr"),
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
    long_flags=long_options(
        "norc noprofile login posix restricted noediting verbose debugger no-rcs interactive "
        "private"
    ),
    long_values=long_options("rcfile init-file"),
)
_SSH = Spec(flags="46AaCfGgKkMNnqsTtVvXxYy", values="BbcDEeFIiJLlmOoPpQRSWw")
_MOSH = Spec(
    flags="an46",
    values="p",
    long_flags=long_options("local no-init no-ssh-pty ssh-pty"),
    long_values=long_options(
        "client server ssh predict family port bind-server experimental-remote-ip predict-overwrite"
    ),
)
# The programs that run a command on another host, and their options.
REMOTE_CLIENTS: dict[str, Spec] = {"ssh": _SSH, "mosh": _MOSH}


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


class Unwrapped(msgspec.Struct):
    """What a wrapper runs: a command line (`inner`), or shell code it carries (`script`);
    neither when it runs nothing or its options were not understood."""

    label: str
    inner: tuple[str, ...] | None = None
    script: str | None = None
    findings: list[Finding] = msgspec.field(default_factory=list[Finding])
    env: dict[str, str] = msgspec.field(default_factory=dict[str, str])  # NAME=VALUE it sets


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
        while rest and ASSIGNMENT.match(rest[0]):
            name, _, value = rest.pop(0).partition("=")
            out.env[name.rstrip("+")] = value
    if names & spec.module and rest:
        rest = ["python", "-m", *rest]
    out.inner = tuple(rest) or spec.default
    return out


def shell_options(argv: Sequence[str]) -> tuple[Parsed, bool]:
    """A shell's options, and whether `-c` (the script is the first operand) was given."""
    parsed = parse_options(_SHELL, argv[1:])
    return parsed, any(name == "-c" for name, _ in parsed.seen)
