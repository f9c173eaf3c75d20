"""The environment a call gives its program, judged: which variables are known to leave what
the program runs alone, and what the card says about each of the others.

An allowlist, not a denylist: a variable is harmless only when it is named here (locale,
time zone, colours, terminal size, log levels). Everything else may make a program load code,
configuration or a helper program — `GIT_*` (`GIT_CONFIG_PARAMETERS`, `GIT_EXTERNAL_DIFF`,
`GIT_DIR`), the loader's `LD_*`/`DYLD_*`, `PAGER`/`EDITOR`, `*_CONFIG_PATH`, `PYTHON*`,
`NODE_OPTIONS`, `BASH_ENV`/`ENV`, `PERL5OPT`, `RUBYOPT`, `LESSOPEN`, `HOME` and `XDG_*` (every
dotfile read from another place), `PATH` — so a known read-only command given one asks, the
card shows it, and an "always" answer covers that value only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from tether.command_policy.words import word_set

# Read as data by the programs that read them at all: none names a file, a program, a module
# or options of another program.
_HARMLESS = word_set(
    "LANG LANGUAGE TZ TERM COLORTERM COLUMNS LINES NO_COLOR FORCE_COLOR CLICOLOR "
    "CLICOLOR_FORCE CI RUST_BACKTRACE RUST_LIB_BACKTRACE RUST_LOG PYTHONUNBUFFERED "
    "PYTHONDONTWRITEBYTECODE PYTHONHASHSEED PYTHONUTF8 PYTHONFAULTHANDLER NODE_ENV"
)
_HARMLESS_PREFIXES = ("LC_",)  # LC_ALL, LC_MESSAGES, ...: locale names

# Why a kind of variable deserves a look: the first pattern that matches names it.
_WHY: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), why)
    for p, why in (
        (r"^GIT_", "configures git, which can make it run another program"),
        (r"^(LD_|DYLD_)", "loads libraries into the program"),
        (r"^(PAGER|MANPAGER|EDITOR|VISUAL|LESSOPEN|LESSCLOSE)$", "names a program to run"),
        (r"^(BASH_ENV|ENV|PROMPT_COMMAND|PS4|SHELLOPTS|BASHOPTS)$", "runs shell code"),
        (r"^(PYTHON|NODE_|PERL|RUBY|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS)", "loads code or options"),
        (r"(_CONFIG_PATH|_CONFIG|RC|_OPTIONS|_OPTS|FLAGS)$", "loads configuration or options"),
        (r"^(HOME|XDG_\w+|PATH)$", "moves where programs and their configuration are found"),
    )
)


def risky(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` not known to leave what a program runs alone, sorted."""
    return {k: env[k] for k in sorted(env) if not harmless(k)}


def harmless(name: str) -> bool:
    return name in _HARMLESS or name.startswith(_HARMLESS_PREFIXES)


def env_dangers(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(reason, preview) per variable that may change what runs: the card shows each."""
    out: list[tuple[str, str]] = []
    for name, value in risky(env).items():
        why = next((w for rx, w in _WHY if rx.search(name)), "is not known to be harmless")
        out.append((f"the environment sets {name}, which {why}", f"{name}={value}"))
    return out


def env_words(env: Mapping[str, str]) -> list[str]:
    """What a grant records of an environment: each variable that may change what runs, with
    a digest of its value (a different value is a different grant)."""
    return [f"{name}={value_digest(value)}" for name, value in risky(env).items()]


def value_digest(text: str) -> str:
    """A short digest naming a value or a piece of code in a grant's scope."""
    return "code#" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
