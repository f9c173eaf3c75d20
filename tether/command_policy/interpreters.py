"""Interpreters (python, node, ruby, perl, shells, deno, bun, ...): which family a program
belongs to, and what one invocation runs: inline code (`python -c`, `node -e`, `perl -ne`), a
script, a module, or an interactive session. The danger classification and the grants name a
call by what it runs."""

from __future__ import annotations

import re

from tether.command_policy.scan import Invocation
from tether.command_policy.words import word_at, word_set
from tether.command_policy.wrappers import SHELLS, shell_options

_INTERPRETERS: tuple[tuple[str, str], ...] = (
    ("python", r"(python|pypy)(\d+(\.\d+)*)?[tdmw]?|py"),
    ("node", r"node(js)?"),
    ("ruby", r"ruby|irb|jruby"),
    ("perl", r"perl(\d+(\.\d+)*)?"),
    ("php", r"php(\d+(\.\d+)*)?"),
    ("lua", r"lua(jit)?(\d+(\.\d+)*)?"),
    ("r", r"rscript|r"),
    ("julia", r"julia"),
    ("powershell", r"pwsh|powershell"),
    ("osascript", r"osascript"),
    ("tcl", r"tclsh(\d+(\.\d+)*)?|wish"),
    ("elixir", r"elixir|iex"),
    ("haskell", r"ghci|runghc|runhaskell"),
    ("deno", r"deno"),
    ("bun", r"bun"),
)
_INTERPRETER_RE = [(fam, re.compile(f"^(?:{rx})$")) for fam, rx in _INTERPRETERS]
_INLINE: dict[str, frozenset[str]] = {
    "python": frozenset({"-c"}),
    "node": frozenset({"-e", "--eval", "-p", "--print"}),
    "bun": frozenset({"-e", "--eval", "-p", "--print"}),
    "ruby": frozenset({"-e"}),
    "perl": frozenset({"-e", "-E"}),
    "php": frozenset({"-r"}),
    "lua": frozenset({"-e"}),
    "r": frozenset({"-e"}),
    "julia": frozenset({"-e", "-E"}),
    "powershell": frozenset({"-c", "-command", "-encodedcommand", "-ec"}),
    "osascript": frozenset({"-e"}),
    "elixir": frozenset({"-e"}),
    "shell": frozenset({"-c"}),
}
_CLUSTERS = frozenset({"python", "ruby", "perl", "shell"})  # `-Ic`, `-ne`, `-lc`
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "python": frozenset({"-W", "-X", "--check-hash-based-pycs"}),
    "node": frozenset({"-r", "--require", "--import", "--loader", "--input-type"}),
    "ruby": frozenset({"-r", "-I", "-C"}),
    "perl": frozenset({"-I", "-M", "-m"}),
}
_INFO = frozenset({"--version", "-V", "-v", "--help", "-h", "-version", "-help", "-?"})


# Programs outside the interpreter families that run what their input holds: line editors,
# database shells, debuggers, calculators with a shell escape, `xargs` (its input is argv).
_RUNS_INPUT = word_set("ed red ex sqlite3 psql mysql gdb lldb dc bc jshell xargs")


def runs_its_input(prog: str) -> bool:
    """Whether `prog` (a program name) may run what it reads on its input as code."""
    return prog in _RUNS_INPUT or interpreter_family(prog) is not None


def interpreter_family(prog: str) -> str | None:
    """A program's interpreter family (`python3.12`: python, `bash`: shell), or None."""
    if prog in SHELLS:
        return "shell"
    for family, rx in _INTERPRETER_RE:
        if rx.match(prog):
            return family
    return None


def interpreter_danger(inv: Invocation, family: str) -> tuple[str, str] | None:
    """What one invocation of an interpreter runs, as a danger reason and its preview; None
    for one that only prints its version or help (or a package-manager subcommand)."""
    prog, args = inv.program, list(inv.args)
    if args and all(a in _INFO for a in args):
        return None
    if family == "shell":
        return _shell_run(inv)
    if family in ("deno", "bun"):
        return _js_runtime(inv, family)
    inline = _INLINE.get(family, frozenset())
    values = _VALUE_OPTIONS.get(family, frozenset())
    i = 0
    while i < len(args):
        a = args[i]
        key = a.lower() if family == "powershell" else a.split("=", 1)[0]
        if a == "--":
            i += 1
            break
        if key in inline:
            code = a.split("=", 1)[1] if "=" in a else word_at(args, i + 1)
            return _inline(prog, key, code)
        cluster = _cluster_code(a, args, i, family, inline)
        if cluster is not None:
            return _inline(prog, cluster[0], cluster[1])
        if family == "python" and a == "-m":
            return (f"{prog} runs the module {word_at(args, i + 1)}", "")
        if not a.startswith("-"):
            return (f"{prog} runs the script {a}", "")
        i += 2 if a in values else 1
    if i < len(args):
        return (f"{prog} runs the script {args[i]}", "")
    return (f"{prog} starts an interactive interpreter (or runs what its input holds)", "")


def _cluster_code(
    a: str, args: list[str], i: int, family: str, inline: frozenset[str]
) -> tuple[str, str] | None:
    """`python -Ic CODE`, `perl -ne CODE`: the inline flag at the end of a short cluster."""
    if family not in _CLUSTERS or a.startswith("--") or len(a) < 3 or not a.startswith("-"):
        return None
    for flag in inline:
        letter = flag[1:]
        if len(letter) == 1 and letter in a[1:]:
            at = a.index(letter, 1)
            return flag, a[at + 1 :] or word_at(args, i + 1)
    return None


def _inline(prog: str, flag: str, code: str) -> tuple[str, str]:
    return (f"{prog} runs inline code ({flag})", f"{prog} {flag}:\n{code}")


def _shell_run(inv: Invocation) -> tuple[str, str]:
    prog = inv.program
    parsed, has_c = shell_options(inv.argv)
    operands = inv.argv[1 + parsed.rest :]
    if has_c and operands:
        return _inline(prog, "-c", operands[0])
    if operands:
        return (f"{prog} runs the script {operands[0]}", "")
    return (f"{prog} starts an interactive shell (or runs what its input holds)", "")


def _js_runtime(inv: Invocation, family: str) -> tuple[str, str] | None:
    prog, args = inv.program, list(inv.args)
    for i, a in enumerate(args):
        if a in _INLINE.get(family, ()) or (family == "deno" and a == "eval"):
            return _inline(prog, a, word_at(args, i + 1))
        if a in ("run", "x", "-") or a.startswith("-"):
            continue
        if a.endswith((".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx")) or "/" in a:
            return (f"{prog} runs the script {a}", "")
        return None  # a package-manager subcommand (`bun install`, `deno fmt`)
    return (f"{prog} starts an interactive interpreter", "") if not args else None
