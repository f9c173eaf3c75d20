"""Known read-only invocations: the commands that may run without anyone asking where no
sandbox confines them (and, in `ask` mode, even where one does).

An allowlist, not a denylist: a command is read-only only when every word of it is understood
and none of them can write a file, run another program or reach the network. An option this
module does not know makes the whole command "not known to be read-only", and the user is asked.
Operands that name files must lie inside the session's directories and not match the path
denylist (`cat .env` and `cat ~/.pgpass` ask), and so must the values given to options with
`=` (`--file=PATH`); a short option carrying a path (`-f/etc/x`) asks. Wrappers (`env`,
`timeout`, `xargs`) are not followed: the bare program must be read-only by itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

import msgspec

from tether.command_policy.words import program_name

PathCheck = Callable[[str], bool]  # True when the operand may be read by a command


def _no_directory(word: str) -> bool:
    return False


class Reader(msgspec.Struct, frozen=True):
    """A read-only program: the options it may take (any, or those listed), the options that
    take a value, the options that make it write or run something, and its operands."""

    any_option: bool = True
    flags: frozenset[str] = frozenset()  # allowed options without a value (`-l`, `--all`)
    values: frozenset[str] = frozenset()  # allowed options taking the next word (`-n 5`)
    refused: frozenset[str] = frozenset()  # options that write or execute: never read-only
    refused_prefixes: tuple[str, ...] = ()  # `--output=...`, `-o...`
    operands: str = "paths"  # "paths" (checked), "words" (not files), "none"
    max_operands: int | None = None
    directories: bool = True  # False: a directory operand is not known to be read-only


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Reading the files a list names (`--files0-from=LIST`): the names are not checked, so asked.
_LISTED = _set("--files0-from")
_PATHS = Reader(refused=_LISTED, refused_prefixes=("--files0-from=",))
_WORDS = Reader(operands="words")
_NOTHING = Reader(any_option=False, operands="none")
# Options that follow links met inside a directory (to anywhere) are not read-only; a link
# given as an operand is checked where it leads.
_FOLLOWS = _set("-L --dereference")
READERS: dict[str, Reader] = {
    **dict.fromkeys(
        _set(
            "cat head tail wc nl tac od hexdump stat readlink realpath "
            "md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum cmp comm "
            "cut paste fold fmt expand unexpand strings column"
        ),
        _PATHS,
    ),
    **dict.fromkeys(_set("ls dir vdir du"), Reader(refused=_LISTED | _FOLLOWS)),
    # Two directories compare the files in them, links followed: files only.
    **dict.fromkeys(_set("diff diff3"), Reader(directories=False)),
    **dict.fromkeys(_set("grep egrep fgrep"), Reader(refused=_set("-R --dereference-recursive"))),
    "rg": Reader(
        refused=_set("--pre --pre-glob -z --search-zip --hostname-bin -L --follow"),
        refused_prefixes=("--pre=", "--pre-glob=", "--hostname-bin="),
    ),
    "find": Reader(
        refused=_set(
            "-exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls -L -follow "
            "-files0-from"
        ),
    ),
    "file": Reader(refused=_set("-C --compile")),
    # -R writes an 00Tree.html in every directory; -l follows links.
    "tree": Reader(refused=_set("-o -R -l")),
    "sort": Reader(
        refused=_set("-o --output -T --temporary-directory --compress-program") | _LISTED,
        refused_prefixes=(
            "--output=",
            "--temporary-directory=",
            "--compress-program=",
            "--files0-from=",
            "-o",
        ),
    ),
    "uniq": Reader(max_operands=1),  # a second operand is the output file
    "df": _PATHS,
    **dict.fromkeys(_set("basename dirname echo printf pwd true false"), _WORDS),
    **dict.fromkeys(_set("whoami id uname arch nproc tty groups logname"), _WORDS),
    **dict.fromkeys(_set("printenv"), _WORDS),
    "which": _WORDS,
    "date": Reader(refused=_set("-s --set"), refused_prefixes=("--set=",), operands="date"),
    # Only the listing options: `-F FILE`, `-b` and the NIS forms set the name.
    "hostname": Reader(
        any_option=False,
        flags=_set(
            "-s --short -f --fqdn --long -d --domain -i --ip-address -I --all-ip-addresses "
            "-A --all-fqdns -a --alias"
        ),
        operands="none",
    ),
    "env": _NOTHING,  # prints the environment; with a program it is a wrapper (not read-only)
}

# `git` global options that only choose where it reads; `-c` and friends can run programs.
_GIT_GLOBAL_FLAGS = _set("--no-pager -P --no-replace-objects --literal-pathspecs --bare")
_GIT_GLOBAL_VALUES = _set("-C --git-dir --work-tree --namespace")
_GIT_READERS: dict[str, Reader] = {
    "status": Reader(operands="paths"),
    "log": Reader(
        refused=_set("--ext-diff --textconv --output -o"), refused_prefixes=("--output=",)
    ),
    "diff": Reader(refused=_set("--ext-diff --textconv --output"), refused_prefixes=("--output=",)),
    "show": Reader(refused=_set("--ext-diff --textconv --output"), refused_prefixes=("--output=",)),
    "blame": Reader(refused=_set("--textconv --contents")),
    "shortlog": _PATHS,
    "rev-parse": _WORDS,
    "ls-files": _PATHS,
    "ls-tree": _WORDS,
    "describe": _WORDS,
    "rev-list": _WORDS,
    "merge-base": _WORDS,
    "name-rev": _WORDS,
    "show-ref": _WORDS,
    "for-each-ref": _WORDS,
    "count-objects": _WORDS,
    "cat-file": Reader(refused=_set("--textconv --filters"), operands="words"),
    "grep": Reader(refused=_set("-O --open-files-in-pager"), refused_prefixes=("-O",)),
    "version": _WORDS,
}


def _branch(rest: list[str]) -> bool:
    return all(
        r in _set("-l --list -a --all -r --remotes -v -vv --verbose --show-current") for r in rest
    )


def _tag(rest: list[str]) -> bool:
    return not rest or (
        rest[0] in ("-l", "--list") and not any(r.startswith("-") for r in rest[1:])
    )


def _remote(rest: list[str]) -> bool:
    if not rest or rest in (["-v"], ["--verbose"]):
        return True
    return rest[0] in ("show", "get-url") and not any(r.startswith("-") for r in rest[1:])


def _stash(rest: list[str]) -> bool:
    return bool(rest) and rest[0] in ("list", "show") and not any(r.startswith("-p") for r in rest)


_CONFIG_READS = _set("--get --get-all --get-regexp -l --list")
_CONFIG_FLAGS = _set("--global --local --system --show-origin --show-scope --name-only -z --null")


def _config(rest: list[str]) -> bool:
    if not rest or rest[0] not in _CONFIG_READS:
        return False
    return all(not r.startswith("-") or r in _CONFIG_FLAGS | _CONFIG_READS for r in rest[1:])


_GIT_LISTINGS: dict[str, Callable[[list[str]], bool]] = {
    "branch": _branch,
    "tag": _tag,
    "remote": _remote,
    "stash": _stash,
    "config": _config,
}
# Programs whose `--version` / `--help` only prints (a bare name from PATH, checked by caller).
VERSIONED = _set(
    "python python3 pip pip3 node npm npx pnpm yarn bun deno cargo rustc rustup go gcc g++ cc "
    "clang make cmake java javac ruby gem perl php git uv ruff docker kubectl gh jq rg fd "
    "bash sh zsh"
)
_INFO = frozenset({"--version", "--help"})
_VERSION_SUBCOMMAND = _set("go docker kubectl gh")  # `go version`
_DATE_OPERAND = re.compile(r"^\+")  # `date +%F`; any other operand sets the clock


def read_only(
    argv: Sequence[str], readable: PathCheck, directory: PathCheck = _no_directory
) -> bool:
    """Whether `argv` (one program, no wrapper) is a known read-only invocation whose file
    operands `readable` allows (`directory`: whether an operand names a directory)."""
    if not argv or not argv[0] or "/" in argv[0] or "\\" in argv[0]:
        return False  # a path runs whatever file is there
    prog, args = program_name(argv[0]), list(argv[1:])
    if prog != argv[0].lower():
        return False
    if prog in VERSIONED and len(args) == 1 and args[0] in _INFO:
        return True
    if prog in _VERSION_SUBCOMMAND and args == ["version"]:
        return True
    if prog == "git":
        return _git(args, readable)
    reader = READERS.get(prog)
    if reader is not None and not reader.directories:
        readable = _files_only(readable, directory)
    return reader is not None and _reads(reader, args, readable)


def _files_only(readable: PathCheck, directory: PathCheck) -> PathCheck:
    return lambda word: readable(word) and not directory(word)


def _reads(reader: Reader, args: list[str], readable: PathCheck) -> bool:
    operands: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands += args[i + 1 :]
            break
        if a.startswith("-") and len(a) > 1:
            name = a.split("=", 1)[0]
            if name in reader.refused or a.startswith(reader.refused_prefixes):
                return False
            if not reader.any_option and name not in reader.flags | reader.values:
                return False
            if _clustered_refusal(a, reader.refused) or not _option_value_ok(a, readable):
                return False
            i += 2 if name in reader.values and "=" not in a else 1
            continue
        operands.append(a)
        i += 1
    return _operands_ok(reader, operands, readable)


def _option_value_ok(arg: str, readable: PathCheck) -> bool:
    """An option's own value may name a file to read (`--file=PATH`, `--ignore-file=PATH`,
    `--files0-from=PATH`, `-fPATH`): a `=` value must be readable like an operand, and a
    short cluster that carries a path (`/` or `~` in it) is not known to be read-only."""
    if arg.startswith("--"):
        _, eq, value = arg.partition("=")
        return not eq or readable(value)
    return "/" not in arg and "~" not in arg


def _clustered_refusal(arg: str, refused: frozenset[str]) -> bool:
    """`-zn` holds `-z`: a short cluster carries each of its letters."""
    if arg.startswith("--") or len(arg) < 3:
        return False
    return any(len(r) == 2 and r[0] == "-" and r[1] in arg[1:] for r in refused)


def _operands_ok(reader: Reader, operands: list[str], readable: PathCheck) -> bool:
    if reader.max_operands is not None and len(operands) > reader.max_operands:
        return False
    if reader.operands == "none":
        return not operands
    if reader.operands == "date":
        return all(_DATE_OPERAND.match(o) for o in operands)
    if reader.operands == "paths":
        return all(readable(o) for o in operands)
    return True


def _git(args: list[str], readable: PathCheck) -> bool:
    i = 0
    while i < len(args):
        a = args[i]
        name = a.split("=", 1)[0]
        if name in _GIT_GLOBAL_FLAGS:
            i += 1
        elif name in _GIT_GLOBAL_VALUES:
            value = a.split("=", 1)[1] if "=" in a else (args[i + 1] if i + 1 < len(args) else None)
            if value is None or (name != "--namespace" and not readable(value)):
                return False
            if name == "-C":  # what follows is read from there
                readable = _from(value, readable)
            i += 1 if "=" in a else 2
        elif a.startswith("-"):
            return False  # -c, --config-env, --exec-path, ...: config can run programs
        else:
            break
    if i >= len(args):
        return False
    sub, rest = args[i], args[i + 1 :]
    if sub in _GIT_READERS:
        return _reads(_GIT_READERS[sub], rest, readable)
    listing = _GIT_LISTINGS.get(sub)
    return listing is not None and listing(rest)  # else an alias, or a subcommand that writes


def _from(directory: str, readable: PathCheck) -> PathCheck:
    """`readable` for words relative to `directory` (`git -C DIR`); an absolute word stays."""
    return lambda word: readable(os.path.join(directory, word) if word else word)
