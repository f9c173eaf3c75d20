"""What tether lets a command do: the denylist (refused in every mode, nobody is asked) and
`classify_danger` (which calls the user confirms, and why). Both judge every program a command
line runs, as `command_scan` finds them: behind wrappers, inside `sh -c`, across `ssh`."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.engine.sandbox.programs import program_files, same_program
from tether.tools.command_resolve import resolve_program
from tether.tools.command_scan import (
    GIT_OPTIONS,
    REMOTE_CLIENTS,
    SHELLS,
    Invocation,
    Scan,
    parse_options,
    scan,
    shell_join,
    shell_options,
)

# --- the denylist --------------------------------------------------------------------------

DEFAULT_DENYLIST: tuple[tuple[str, str], ...] = (
    ("privilege escalation", "sudo"),
    ("privilege escalation", "sudoedit"),
    ("privilege escalation", "su"),
    ("privilege escalation", "doas"),
    ("privilege escalation", "pkexec"),
    ("privilege escalation", "run0"),
    ("privilege escalation", "runuser"),
    ("privilege escalation", "systemd-run"),
    ("destructive", "rm -r / ~"),
    ("destructive", "rm -R / ~"),
    ("destructive", "rm --recursive / ~"),
    ("destructive", "chown -R /"),
    ("destructive", "chown --recursive /"),
    ("destructive", "chmod -R /"),
    ("destructive", "chmod --recursive /"),
    ("destructive", "mkfs*"),
    ("destructive", "mkswap"),
    ("destructive", "wipefs"),
    ("destructive", "fdisk"),
    ("destructive", "sfdisk"),
    ("destructive", "parted"),
    ("destructive", "dd"),
    ("destructive", "mount"),
    ("destructive", "umount"),
    ("power state", "shutdown"),
    ("power state", "reboot"),
    ("power state", "poweroff"),
    ("power state", "halt"),
    ("power state", "init"),
    ("power state", "telinit"),
    ("power state", "kexec"),
    ("power state", "pm-*"),
    ("power state", "s2ram"),
    ("power state", "s2disk"),
    ("power state", "s2both"),
    (
        "power state",
        "systemctl reboot poweroff halt suspend hibernate hybrid-sleep "
        "suspend-then-hibernate kexec soft-reboot rescue emergency",
    ),
    ("power state", "loginctl reboot poweroff halt suspend hibernate hybrid-sleep"),
)


@dataclass(frozen=True)
class DenyRule:
    """`program [flags] [words]`: the program (a trailing `*` matches a prefix), every flag
    given (`-r` also inside `-rf`), and, when words are listed, at least one argument among
    them (`reboot` also matches `reboot.target`; paths compare normalised: `/*`, `//`, `/.`)."""

    program: str
    flags: tuple[str, ...]
    words: frozenset[str]
    category: str
    entry: str

    @classmethod
    def parse(cls, entry: str, category: str = "configured") -> DenyRule:
        tokens = entry.split()
        if not tokens:
            raise ValueError("an empty denylist entry")
        flags = tuple(t for t in tokens[1:] if t.startswith("-"))
        words = frozenset(_norm(t) for t in tokens[1:] if not t.startswith("-"))
        return cls(tokens[0].lower(), flags, words, category, " ".join(tokens))

    def matches(self, inv: Invocation) -> bool:
        prog = inv.program
        if self.program.endswith("*"):
            if not prog.startswith(self.program[:-1]):
                return False
        elif prog != self.program:
            return False
        options = _options(inv.args)
        if not all(_has_flag(options, f) for f in self.flags):
            return False
        return not self.words or any(_word_matches(a, self.words) for a in inv.args)


def _options(args: Sequence[str]) -> list[str]:
    out: list[str] = []
    for a in args:
        if a == "--":
            break
        if a.startswith("-") and len(a) > 1:
            out.append(a)
    return out


def _has_flag(options: list[str], flag: str) -> bool:
    if flag.startswith("--"):
        return any(o == flag or o.startswith(flag + "=") for o in options)
    return any(not o.startswith("--") and flag[1:] in o[1:] for o in options)


def _norm(word: str) -> str:
    """A path as the denylist compares it: `~`/`$HOME` as `~`, no `/*`, `/.`, `//`, `..`."""
    w = re.sub(r"^(~|\$HOME|\$\{HOME\})(?=/|$)", "~", word)
    if not w.startswith(("/", "~")):
        return w
    w = re.sub(r"/+", "/", w)
    while w.endswith(("/*", "/.")):
        w = w[:-2] or "/"
    return posixpath.normpath(w)


def _word_matches(arg: str, words: frozenset[str]) -> bool:
    a = _norm(arg)
    return a in words or any(a.startswith(w + ".") for w in words)


@dataclass(frozen=True)
class DenyHit:
    rule: DenyRule
    invocation: Invocation
    command: tuple[str, ...]  # the whole command line the model asked for
    alias: str | None = None  # the name it was run by, when that is a link or copy

    def message(self) -> str:
        inv = self.invocation
        where = f" on {inv.remote!r}" if inv.remote else ""
        behind = f" (behind {', '.join(inv.via)})" if inv.via else ""
        behind += f" (run as {self.alias}, the same program)" if self.alias else ""
        return (
            f"denylisted: {shell_join(inv.argv)}{where}{behind} — {self.rule.category} "
            f"(`{self.rule.entry}`). tether refuses it in every mode without asking; do the "
            "work another way, or ask the user to run it themselves."
        )


class Denylist:
    def __init__(self, rules: Iterable[DenyRule]) -> None:
        self.rules = tuple(rules)

    @classmethod
    def default(cls) -> Denylist:
        return cls(DenyRule.parse(entry, category) for category, entry in DEFAULT_DENYLIST)

    @classmethod
    def from_config(cls, entries: Sequence[str], *, builtin: bool = True) -> Denylist:
        """The configured entries, after the built-in ones unless `builtin` is off."""
        configured = [DenyRule.parse(e) for e in entries if e.strip()]
        return cls([*(cls.default().rules if builtin else ()), *configured])

    def check(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> DenyHit | None:
        """The first program of the command line (wrappers, shells, hops and git aliases
        included) that the list refuses. With `cwd`, each program is also known by the file
        it runs, so `./zap` linked or copied from `dd` is `dd`."""
        found = scan(argv, env)
        return self.check_scan(found, tuple(argv)) or (
            self._by_file(found, tuple(argv), cwd) if cwd is not None else None
        )

    def check_scan(self, found: Scan, command: tuple[str, ...]) -> DenyHit | None:
        for inv in found.invocations:
            for rule in self.rules:
                if rule.matches(inv):
                    return DenyHit(rule, inv, command)
        return None

    def whole_programs(self) -> tuple[str, ...]:
        """The programs refused whatever their arguments (`dd`, `mkfs*`): a sandbox makes
        their files unrunnable."""
        return tuple(dict.fromkeys(r.program for r in self.rules if not r.flags and not r.words))

    def _by_file(self, found: Scan, command: tuple[str, ...], cwd: Path) -> DenyHit | None:
        whole = self.whole_programs()
        files = program_files(whole)
        if not files:
            return None
        for inv in found.invocations:
            if inv.remote is not None or not inv.argv:
                continue
            real = resolve_program(inv.argv[0], cwd, found.env)
            same = same_program(real, files) if real is not None else None
            if same is None:
                continue
            for rule in self.rules:
                renamed = Invocation((same.name, *inv.args), inv.via, None)
                if rule.program in whole and rule.matches(renamed):
                    return DenyHit(rule, renamed, command, alias=inv.argv[0])
        return None


# --- danger --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DangerReason:
    """Why a call deserves the user's confirmation: one line per reason, and the code or
    command lines carried in arguments (`python -c:` + the code), for the permission card."""

    reasons: tuple[str, ...]
    previews: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return "\n".join(self.reasons)


def classify_danger(name: str, args: Mapping[str, Any]) -> DangerReason | None:
    """Which process calls need a confirm even where commands run freely (mode `code`)."""
    argvs: list[list[str]] = []
    if name in ("run_argv", "open_pty"):
        argvs = [_strings(args.get("argv"))]
    elif name == "run_argv_batch":
        argvs = [_strings(n.get("argv")) for n in _walk_nodes(args.get("nodes"))]
    found: list[tuple[str, str]] = []
    for argv in argvs:
        found.extend(command_danger(argv))
    if not found:
        return None
    unique = list(dict.fromkeys(found))
    return DangerReason(
        tuple(dict.fromkeys(r for r, _ in unique)),
        tuple(dict.fromkeys(p for _, p in unique if p)),
    )


def _strings(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, str)]


def _walk_nodes(value: object) -> Iterator[Mapping[str, Any]]:
    """Every node of a run_argv_batch, continuations included (`then`, `else`, `pipe`)."""
    items: list[object] = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, Mapping):
            node: Mapping[str, Any] = item
            yield node
            for key in ("then", "else", "pipe"):
                if node.get(key) is not None:
                    yield from _walk_nodes(node[key])


def command_danger(argv: Sequence[str]) -> list[tuple[str, str]]:
    """(reason, preview) pairs for one command line; empty when it looks harmless."""
    if not argv:
        return []
    found = scan(argv)
    out = [(f.text, f.preview) for f in found.findings]
    hosts = dict.fromkeys(inv.remote for inv in found.invocations if inv.remote)
    out += [(f"runs commands on the remote host {h!r}", "") for h in hosts]
    for inv in found.invocations:
        where = f"on {inv.remote!r}: " if inv.remote else ""
        out += [(where + r, p) for r, p in program_danger(inv)]
    return out


def program_danger(inv: Invocation) -> list[tuple[str, str]]:
    """What one program may do that deserves a look, judged from its own arguments."""
    prog = inv.program
    family = interpreter_family(prog)
    if family is not None:
        found = _interpreter(inv, family)
        return [found] if found else []
    judge = _PROGRAMS.get(prog)
    if judge is not None:
        reason = judge(inv)
        return [(reason, "")] if reason else []
    if prog.endswith(_SCRIPT_SUFFIXES):
        return [(f"runs the script {inv.argv[0]}", "")]
    return []


# --- interpreters --------------------------------------------------------------------------

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
_SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl")


def interpreter_family(prog: str) -> str | None:
    if prog in SHELLS:
        return "shell"
    for family, rx in _INTERPRETER_RE:
        if rx.match(prog):
            return family
    return None


def _interpreter(inv: Invocation, family: str) -> tuple[str, str] | None:
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
            code = a.split("=", 1)[1] if "=" in a else _at(args, i + 1)
            return _inline(prog, key, code)
        cluster = _cluster_code(a, args, i, family, inline)
        if cluster is not None:
            return _inline(prog, cluster[0], cluster[1])
        if family == "python" and a == "-m":
            return (f"{prog} runs the module {_at(args, i + 1)}", "")
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
            return flag, a[at + 1 :] or _at(args, i + 1)
    return None


def _at(args: Sequence[str], i: int) -> str:
    return args[i] if i < len(args) else ""


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
            return _inline(prog, a, _at(args, i + 1))
        if a in ("run", "x", "-") or a.startswith("-"):
            continue
        if a.endswith((".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx")) or "/" in a:
            return (f"{prog} runs the script {a}", "")
        return None  # a package-manager subcommand (`bun install`, `deno fmt`)
    return (f"{prog} starts an interactive interpreter", "") if not args else None


# --- other programs ------------------------------------------------------------------------

Judge = Callable[[Invocation], "str | None"]


def _operands(inv: Invocation) -> list[str]:
    out: list[str] = []
    dashdash = False
    for a in inv.args:
        if a == "--" and not dashdash:
            dashdash = True
        elif dashdash or not a.startswith("-") or a == "-":
            out.append(a)
    return out


def _listed(words: Sequence[str], limit: int = 3) -> str:
    shown = shell_join(words[:limit])
    return shown + (f" (+{len(words) - limit} more)" if len(words) > limit else "")


def _any_flag(inv: Invocation, *flags: str) -> bool:
    options = _options(inv.args)
    return any(_has_flag(options, f) for f in flags)


def _deletes(inv: Invocation) -> str:
    return f"deletes files: {_listed(_operands(inv))}"


def _moves(inv: Invocation) -> str | None:
    ops = _operands(inv)
    return f"moves files (may replace the target): {_listed(ops)}" if ops else None


def _copies(inv: Invocation) -> str | None:
    ops = _operands(inv)
    if not ops or _any_flag(inv, "-n", "--no-clobber") or "--update=none" in inv.args:
        return None
    return f"copies files (may replace {ops[-1]})"


def _links(inv: Invocation) -> str | None:
    return "replaces files with links" if _any_flag(inv, "-f", "--force") else None


def _writes(inv: Invocation) -> str | None:
    ops = _operands(inv)
    return f"writes files: {_listed(ops)}" if ops else None


def _sed(inv: Invocation) -> str | None:
    for a in inv.args:
        if a.startswith("--in-place"):
            return "edits files in place"
        if a.startswith("-") and not a.startswith("--"):
            for ch in a[1:]:
                if ch == "i":
                    return "edits files in place"
                if ch in "efl":
                    break
    return None


def _find(inv: Invocation) -> str | None:
    return "deletes the files it finds" if "-delete" in inv.args else None


def _perms(inv: Invocation) -> str:
    return f"changes file ownership or permissions: {_listed(_operands(inv))}"


def _git(inv: Invocation) -> str | None:
    parsed = parse_options(GIT_OPTIONS, inv.args)
    rest = list(inv.args[parsed.rest :])
    if parsed.unknown or not rest:
        return None
    sub, args = rest[0], rest[1:]
    return _git_subcommand(sub, args)


_GIT_DISCARD = "discards uncommitted changes"


def _git_subcommand(sub: str, args: list[str]) -> str | None:
    has = set(args)
    if sub == "push":
        forced = has & {"-f", "--force", "--force-with-lease", "--mirror", "--delete", "-d"}
        return "pushes to a remote" + (" (rewriting or deleting remote refs)" if forced else "")
    if sub == "clean":
        return None if has & {"-n", "--dry-run"} else "deletes untracked files"
    if sub == "reset":
        return f"{_GIT_DISCARD} (git reset)" if has & {"--hard", "--merge", "--keep"} else None
    if sub == "checkout":
        risky = has & {"-f", "--force", "--", ".", "-p", "--patch"}
        return f"{_GIT_DISCARD} (git checkout)" if risky else None
    if sub == "restore":
        staged_only = has & {"--staged", "-S"} and not has & {"--worktree", "-W"}
        return None if staged_only else f"{_GIT_DISCARD} (git restore)"
    if sub == "switch":
        return (
            f"{_GIT_DISCARD} (git switch)" if has & {"-f", "--force", "--discard-changes"} else None
        )
    if sub == "stash" and args and args[0] in ("drop", "clear"):
        return "deletes stashed changes"
    if sub == "branch" and has & {"-D", "-d", "--delete", "-M", "-f", "--force"}:
        return "deletes or overwrites branches"
    if sub == "tag" and has & {"-d", "--delete", "-f", "--force"}:
        return "deletes or moves tags"
    if sub in ("rm", "mv"):
        return "deletes files (git rm)" if sub == "rm" else "moves files (git mv)"
    if sub in ("filter-branch", "filter-repo", "update-ref", "reflog", "worktree", "gc"):
        risky_words = {"-d", "--delete", "delete", "expire", "remove", "prune", "--prune=now"}
        return (
            "rewrites or deletes history" if sub.startswith("filter") or has & risky_words else None
        )
    return None


_CURL_DATA = frozenset(
    {"-d", "--data", "--data-raw", "--data-binary", "--data-ascii", "--data-urlencode"}
    | {"--json", "-F", "--form", "--form-string", "-T", "--upload-file"}
)


def _curl(inv: Invocation) -> str | None:
    args = list(inv.args)
    for i, a in enumerate(args):
        name = a.split("=", 1)[0]
        if name in _CURL_DATA or (a[:2] in ("-d", "-F", "-T") and not a.startswith("--")):
            return "sends data over the network (curl upload)"
        method = None
        if a in ("-X", "--request"):
            method = _at(args, i + 1)
        elif a.startswith("-X") and len(a) > 2:
            method = a[2:]
        elif a.startswith("--request="):
            method = a.split("=", 1)[1]
        if method and method.upper() not in ("GET", "HEAD", "OPTIONS"):
            return f"sends a {method.upper()} request over the network"
    return None


def _wget(inv: Invocation) -> str | None:
    for a in inv.args:
        name, _, value = a.partition("=")
        if name in ("--post-data", "--post-file", "--body-data", "--body-file"):
            return "sends data over the network (wget upload)"
        if name == "--method" and value.upper() not in ("GET", "HEAD", "OPTIONS", ""):
            return f"sends a {value.upper()} request over the network"
    return None


def _httpie(inv: Invocation) -> str | None:
    ops = _operands(inv)
    if ops and ops[0].upper() in ("POST", "PUT", "PATCH", "DELETE"):
        return f"sends a {ops[0].upper()} request over the network"
    return None


def _rsync(inv: Invocation) -> str | None:
    ops = _operands(inv)
    remote = any(re.match(r"^[^/]*:", o) or o.startswith("rsync://") for o in ops)
    if remote:
        return "copies files over the network"
    return "deletes files at the destination (rsync --delete)" if _delete_opt(inv) else None


def _delete_opt(inv: Invocation) -> bool:
    return any(a.startswith("--delete") or a == "--remove-source-files" for a in inv.args)


def _publish(word: str, what: str) -> Judge:
    def judge(inv: Invocation) -> str | None:
        return f"publishes {what}" if word in inv.args else None

    return judge


def _gh(inv: Invocation) -> str | None:
    args = list(inv.args)
    if not args:
        return None
    if args[0] == "api":
        for i, a in enumerate(args):
            method = _at(args, i + 1) if a in ("-X", "--method") else None
            if a.startswith("--method="):
                method = a.split("=", 1)[1]
            if method and method.upper() != "GET":
                return f"sends a {method.upper()} request to GitHub"
            if a in ("-f", "-F", "--field", "--raw-field", "--input"):
                return "sends data to GitHub"
        return None
    mutating = {"create", "merge", "close", "reopen", "comment", "edit", "delete", "review"}
    mutating |= {"upload", "fork", "rename", "archive", "lock", "transfer", "ready"}
    if len(args) > 1 and args[1] in mutating:
        return f"changes things on GitHub (gh {args[0]} {args[1]})"
    return None


def _detached_session(inv: Invocation) -> str | None:
    detach = {"-d", "-dm"} if inv.program == "tmux" else {"-d", "-dm", "-dmS", "-D", "-Dm"}
    if set(inv.args) & detach:
        return f"starts a detached {inv.program} session that outlives this turn"
    return None


def _schedules(inv: Invocation) -> str | None:
    if inv.program == "crontab" and set(inv.args) & {"-l"}:
        return None
    return "schedules commands to run later"


def _signals(inv: Invocation) -> str | None:
    if set(inv.args) & {"-l", "-L", "--list"}:
        return None
    return "sends signals to other processes"


def _network(text: str) -> Judge:
    return lambda inv: text


def _remote_client(inv: Invocation) -> str | None:
    return None  # command_scan reports its remote shell, its hops and BatchMode


_PROGRAMS: dict[str, Judge] = {
    **dict.fromkeys(("rm", "rmdir", "unlink", "shred", "srm", "wipe"), _deletes),
    "mv": _moves,
    **dict.fromkeys(("cp", "install"), _copies),
    "ln": _links,
    **dict.fromkeys(("tee", "truncate"), _writes),
    "sed": _sed,
    "find": _find,
    **dict.fromkeys(("chmod", "chown", "chgrp", "chattr", "setfacl"), _perms),
    "git": _git,
    "curl": _curl,
    "wget": _wget,
    **dict.fromkeys(("http", "https", "xh", "xhs"), _httpie),
    "rsync": _rsync,
    **dict.fromkeys(("scp", "sftp", "ftp", "lftp"), _network("copies files over the network")),
    **dict.fromkeys(
        ("nc", "ncat", "netcat", "socat", "telnet"), _network("opens a raw network connection")
    ),
    **dict.fromkeys(
        ("npm", "pnpm", "yarn", "cargo", "poetry", "uv", "hatch", "flit"),
        _publish("publish", "a package"),
    ),
    "twine": _publish("upload", "a package"),
    "gem": _publish("push", "a gem"),
    **dict.fromkeys(("docker", "podman"), _publish("push", "an image")),
    "gh": _gh,
    **dict.fromkeys(("tmux", "screen"), _detached_session),
    **dict.fromkeys(("at", "batch", "crontab"), _schedules),
    **dict.fromkeys(("kill", "pkill", "killall"), _signals),
    **dict.fromkeys(tuple(REMOTE_CLIENTS), _remote_client),
}
