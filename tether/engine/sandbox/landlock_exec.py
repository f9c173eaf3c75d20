"""Run one program under Landlock: `python -I -S landlock_exec.py POLICY.json -- ARGV...`.

tether starts this file as its own process (it imports nothing of tether, so it starts in a few
milliseconds under `-I -S`); the program's process confines itself and then becomes the program
with `execvp`: Landlock rules cannot be lifted, so the program and everything it starts stay
confined.

The policy (JSON): `writable` trees (the session's roots, write grants, the private temp dir),
`protected` paths inside them that stay read-only, existing or not (uncommitted work, `.git`,
what acts later), `hidden` paths no one may read or run (secrets, denylisted programs), `tmp`,
`network`, `tty` (the command runs on a PTY of its own, which it may open again), `owner` (the
tether whose end ends the command). Landlock only grants, so a tree with holes in it is granted
entry by entry around each hole (`grant_around`).

If anything fails, the program is not run: exit code 126 and a line on stderr. Never unconfined.

The program's lifetime is lifetime_exec.py's (`run`): a PID namespace of its own where the
kernel allows (a user namespace for it when unprivileged); its end, and tether's, kill
everything it started.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from collections.abc import Iterable
from types import ModuleType

# Landlock access rights (linux/landlock.h), with the ABI that introduced each.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = READ_FILE | READ_DIR | EXECUTE
WRITE = (
    WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_SYM
)
DEVICE = WRITE_FILE | READ_FILE | IOCTL_DEV  # the few devices a command writes (tty, null)
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # what a file rule may hold
# Devices every command may open. Not the terminals: /dev/pts holds the user's (the one tether
# runs in takes escape sequences: OSC 52 sets the clipboard). A command on a PTY of its own
# gets that one and /dev/tty (see own_terminal); one without gets none.
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/ptmx", "/dev/shm")

_SYS_CREATE, _SYS_ADD_RULE, _SYS_RESTRICT = 444, 445, 446  # the same on every architecture
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT = 38, 24, 47
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000


class _RulesetAttr(ctypes.Structure):
    _fields_ = (("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64))


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32))


class Refused(Exception):
    """The sandbox could not be set up: the program must not run."""


def fs_rights(abi: int) -> int:
    """Every file-system right this kernel's Landlock knows (handled, so denied unless granted)."""
    rights = READ | WRITE | MAKE_CHAR | MAKE_BLOCK
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def write_rights(abi: int) -> int:
    return fs_rights(abi) & (WRITE | REFER | TRUNCATE)


def grant_around(base: str, rights: int, holes: Iterable[str]) -> list[tuple[str, int]]:
    """Rules granting `rights` on the tree at `base` except on each hole (and what lies below
    it): the tree whole when no hole is inside it, else each entry of it, recursively along
    the paths to the holes. Directories on those paths keep only READ_DIR (listing)."""
    inside = [h for h in holes if h == base or h.startswith(base.rstrip("/") + "/")]
    if not inside:
        return [(base, rights)]
    if base in inside:
        return []
    rules: list[tuple[str, int]] = [(base, rights & READ_DIR)] if rights & READ_DIR else []
    try:
        with os.scandir(base) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:
        return rules
    for entry in entries:
        if entry.is_symlink():
            continue  # a rule on a link would grant its target; the target is reached anyway
        if entry.is_dir(follow_symlinks=False):
            rules += grant_around(entry.path, rights, inside)
        elif not any(h == entry.path for h in inside):
            rules.append((entry.path, rights & FILE_RIGHTS))  # a file takes a file's rights
    return rules


def plan_rules(policy: dict[str, object], abi: int) -> list[tuple[str, int]]:
    """Every rule the policy needs, on this ABI."""
    hidden = _paths(policy.get("hidden"))
    protected = _paths(policy.get("protected"))
    writes = write_rights(abi)
    rules = grant_around("/", READ & fs_rights(abi), hidden)
    for tree in _paths(policy.get("writable")):
        rules += [(p, r & writes) for p, r in grant_around(tree, writes, protected) if r & writes]
    devices = [*DEVICES, *own_terminal()] if policy.get("tty") else DEVICES
    rules += [(d, DEVICE & fs_rights(abi)) for d in devices if os.path.exists(d)]
    return rules


def own_terminal() -> list[str]:
    """The terminal this process was given on its standard streams (the PTY tether opened for
    the command), and /dev/tty, which names the controlling terminal."""
    found = ["/dev/tty"]
    for fd in (0, 1, 2):
        try:
            name = os.ttyname(fd)
        except OSError:
            continue
        if name.startswith("/dev/pts/") and name not in found:
            found.append(name)
    return found


def _paths(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


# --- the system calls ------------------------------------------------------------------------


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def abi_version() -> int:
    """The kernel's Landlock ABI (0: none, or disabled at boot)."""
    version = _syscall(_SYS_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(version), 0)


def _fail(what: str) -> Refused:
    err = ctypes.get_errno()
    return Refused(f"{what}: {os.strerror(err)}")


def _ruleset(abi: int, *, tcp: bool) -> int:
    attr = _RulesetAttr(fs_rights(abi), 0, 0)
    if tcp and abi >= 4:
        attr.net = NET_BIND_TCP | NET_CONNECT_TCP  # handled, no rule: no TCP at all
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    fd = _syscall(_SYS_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise _fail("landlock_create_ruleset")
    return int(fd)


def _add(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone since it was listed: nothing there to grant
    try:
        if not rights:
            return
        if rights & ~FILE_RIGHTS and not os.path.isdir(path):
            rights &= FILE_RIGHTS  # a whole tree's rights, given at a file
        rule = _PathBeneath(rights, fd)
        done = _syscall(
            _SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
            ctypes.byref(rule), ctypes.c_uint32(0),
        )  # fmt: skip
        if done != 0:
            raise _fail(f"landlock_add_rule {path}")
    finally:
        os.close(fd)


def _private_network() -> bool:
    """A network namespace of our own (nothing but a down loopback), if the kernel lets us."""
    if os.geteuid() == 0 and _libc.unshare(_CLONE_NEWNET) == 0:
        return True
    uid, gid = os.geteuid(), os.getegid()
    if _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        return False
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):  # fmt: skip
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError as exc:
        raise Refused(f"cannot map the user into its namespace: {exc}") from None
    return True


def _drop_capabilities() -> None:
    """No capability survives (root included): a confined root must not remount or chroot."""
    for cap in range(64):
        _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails past the last cap: harmless
    _libc.prctl(_PR_CAP_AMBIENT, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    if _libc.capset(header, data) != 0:
        raise _fail("capset")


def confine(policy: dict[str, object]) -> None:
    abi = abi_version()
    if abi < 1:
        raise Refused("this kernel has no Landlock")
    network = bool(policy.get("network"))
    own_net = False if network else _private_network()
    ruleset = _ruleset(abi, tcp=not network and not own_net)
    try:
        for path, rights in plan_rules(policy, abi):
            _add(ruleset, path, rights)
        _drop_capabilities()
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _fail("prctl(NO_NEW_PRIVS)")
        if _syscall(_SYS_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise _fail("landlock_restrict_self")
    finally:
        os.close(ruleset)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: landlock_exec.py POLICY.json -- PROGRAM [ARG...]", file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as f:
            policy = json.load(f)
    except (OSError, ValueError) as exc:
        return _refuse(exc)
    if not isinstance(policy, dict):
        return _refuse(ValueError("the policy is not an object"))
    # The program's own process confines itself just before it becomes the program; its
    # lifetime (a PID namespace, tether's end) is lifetime_exec's.
    return _lifetime().run(  # never returns: it ends as the program ended
        argv[2:], _text(policy.get("owner")), user_namespace=True, prepare=lambda: _enter(policy)
    )


def _enter(policy: dict[str, object]) -> None:
    """Confine this process and set the program's environment; on failure, exit 126 (the
    program never runs unconfined)."""
    try:
        confine(policy)
    except (OSError, ValueError, Refused) as exc:
        os._exit(_refuse(exc))
    tmp = policy.get("tmp")
    if isinstance(tmp, str):
        os.environ["TMPDIR"] = tmp
    for name in _paths(policy.get("unset_env")):
        os.environ.pop(name, None)


def _refuse(exc: Exception) -> int:
    print(f"tether sandbox: cannot confine the command; it did not run: {exc}", file=sys.stderr)
    sys.stderr.flush()
    return 126


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _lifetime() -> ModuleType:
    """lifetime_exec.py beside this file (run as a script, this file has no package)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.append(here)  # last: nothing of the standard library is shadowed
    import lifetime_exec

    return lifetime_exec


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
