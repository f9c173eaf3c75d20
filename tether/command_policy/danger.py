"""Which calls deserve the user's confirmation even where commands run freely (mode `code`),
and why: `command_danger` judges every program a command line runs (as command_policy/scan.py finds
them) from its own arguments (inline code, deleting, moving or overwriting files, rewriting git
history, sending data over the network, publishing, detaching, signalling), and the scan's
findings (carried command lines, options nobody understood, remote hosts). The card shows each
reason, and the carried code."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import msgspec

from tether.command_policy.interpreters import interpreter_danger, interpreter_family
from tether.command_policy.scan import GIT_OPTIONS, Invocation, scan
from tether.command_policy.words import given_options, has_flag, parse_options, shell_join, word_at
from tether.command_policy.wrappers import REMOTE_CLIENTS

_SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl")


class DangerReason(msgspec.Struct, frozen=True):
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


def command_danger(
    argv: Sequence[str], env: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """(reason, preview) pairs for one command line given `env` (git configured through
    its environment runs what its settings name); empty when it looks harmless."""
    if not argv:
        return []
    found = scan(argv, env)
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
        found = interpreter_danger(inv, family)
        return [found] if found else []
    judge = _PROGRAMS.get(prog)
    if judge is not None:
        reason = judge(inv)
        return [(reason, "")] if reason else []
    if prog.endswith(_SCRIPT_SUFFIXES):
        return [(f"runs the script {inv.argv[0]}", "")]
    return []


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
    options = given_options(inv.args)
    return any(has_flag(options, f) for f in flags)


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
            method = word_at(args, i + 1)
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
            method = word_at(args, i + 1) if a in ("-X", "--method") else None
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
    return None  # the scan reports its remote shell, its hops and BatchMode


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
