"""The denylist: programs tether refuses to run in every mode, nobody asked (privilege
escalation, destructive disk and file-system commands, power state). It judges every program a
command line runs, as scan.py finds them (behind wrappers, inside `sh -c`, across `ssh`,
through git aliases), and each program also by the file it runs, so a link or a copy of a
denylisted program under another name is refused too. Defence in depth: what confines a command
is the sandbox, never this list."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import msgspec

from tether.command_policy.program_path import resolve_program
from tether.command_policy.scan import Invocation, Scan, scan
from tether.command_policy.words import given_options, has_flag, shell_join
from tether.engine.sandbox.programs import program_files, same_program

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


class DenyRule(msgspec.Struct, frozen=True):
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
        options = given_options(inv.args)
        if not all(has_flag(options, f) for f in self.flags):
            return False
        return not self.words or any(_word_matches(a, self.words) for a in inv.args)


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


class DenyHit(msgspec.Struct, frozen=True):
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
