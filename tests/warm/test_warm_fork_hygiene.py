"""Fork hygiene: what tether's modules decide when they are imported was decided in the warm
server, under its environment, not in the launcher a worker serves. Every such decision is
listed here (found by reading the source: module-level code that reads the environment, the
process, the platform or the clock, calls ctypes or threading, defines a cache, or module state
that functions change later), and each is shown to be right in a worker: the same as a cold
start of the launcher would make it (what depends only on the interpreter and the machine, both
part of the server's identity), as import left it when the server forked (caches and state
filled only when used), or remade in the fork (what names a process).

What used to be decided at import and depended on the environment is now decided when used, and
is shown to follow the launcher, as are the interpreter's own start-up decisions a worker takes
over (standard streams, locale, temporary directory) or shares through the identity (flags,
hash seed)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import REPO

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="warm starts are Linux-only")

PLATFORM = "the same for every process of the server's identity (interpreter, machine, mounts)"
AS_IMPORTED = "filled only when used: at the fork as import left it"
PER_PROCESS = "remade in each fork (os.register_at_fork)"

# module:name -> (kind, probe: an expression of the module `m`)
DECISIONS: dict[str, tuple[str, str]] = {
    "tether.command_policy.decision:denylist": (AS_IMPORTED, "m.denylist.cache_info().currsize"),
    "tether.engine.local.env_allowlist:_current": (
        AS_IMPORTED,
        "(sorted(m._current.names), m._current.prefixes, sorted(m._current.secrets))",
    ),
    "tether.engine.local.file_system:_COMMON": (PLATFORM, "m._COMMON"),
    "tether.engine.local.ignore_files:_OPEN": (PLATFORM, "m._OPEN"),
    "tether.engine.local.nofollow:_DIR": (PLATFORM, "m._DIR"),
    "tether.engine.local.processes:_POSIX": (PLATFORM, "m._POSIX"),
    "tether.engine.local.pty_host:_LIVE": (AS_IMPORTED, "len(m._LIVE)"),
    "tether.engine.local.reaper:OWNER": (PER_PROCESS, "m.OWNER"),
    "tether.engine.local.reaper:os.register_at_fork()": (PER_PROCESS, "m.OWNER"),
    "tether.engine.local.reaper:_at_stop": (AS_IMPORTED, "len(m._at_stop)"),
    "tether.engine.local.reaper:_installed": (AS_IMPORTED, "m._installed"),
    "tether.engine.local.temp_workspaces:_guard": (AS_IMPORTED, "m._guard.locked()"),
    "tether.engine.local.temp_workspaces:_remove_at_end": (
        AS_IMPORTED,
        "m._remove_at_end.cache_info().currsize",
    ),
    "tether.engine.local.temp_workspaces:_made": (AS_IMPORTED, "len(m._made)"),
    "tether.engine.local.ripgrep:find_rg": (AS_IMPORTED, "m.find_rg.cache_info().currsize"),
    "tether.engine.local.ripgrep:rg_version": (AS_IMPORTED, "m.rg_version.cache_info().currsize"),
    "tether.engine.local.scan_grep:_OPEN": (PLATFORM, "m._OPEN"),
    "tether.engine.local.search_rules:_one_regex": (
        AS_IMPORTED,
        "m._one_regex.cache_info().currsize",
    ),
    "tether.engine.providers.http_transport:_tls": (AS_IMPORTED, "m._tls is None"),
    "tether.engine.providers.thinking_refusals:_learned": (AS_IMPORTED, "len(m._learned)"),
    "tether.engine.providers.http_transport:_tls_lock": (AS_IMPORTED, "m._tls_lock.locked()"),
    "tether.engine.sandbox.detect:_detect": (AS_IMPORTED, "m._detect.cache_info().currsize"),
    "tether.engine.sandbox.detect:_probing": (AS_IMPORTED, "m._probing.locked()"),
    "tether.engine.schema_fit:_meta": (AS_IMPORTED, "m._meta.cache_info().currsize"),
    "tether.engine.sandbox.landlock_exec:_libc": (PLATFORM, "type(m._libc).__name__"),
    "tether.engine.sandbox.lifetime_exec:_ended": (AS_IMPORTED, "len(m._ended)"),
    "tether.engine.sandbox.lifetime_exec:_libc": (PLATFORM, "type(m._libc).__name__"),
    "tether.engine.sandbox.lifetime_exec:_pending": (AS_IMPORTED, "len(m._pending)"),
    "tether.engine.sandbox.lifetime_exec:_target": (AS_IMPORTED, "m._target"),
    "tether.engine.sandbox.placeholders:tools": (AS_IMPORTED, "m.tools.cache_info().currsize"),
    "tether.engine.sandbox.programs:_digest": (AS_IMPORTED, "m._digest.cache_info().currsize"),
    "tether.engine.sandbox.programs:program_files": (
        AS_IMPORTED,
        "m.program_files.cache_info().currsize",
    ),
    "tether.engine.sandbox.session_cgroups:_guard": (AS_IMPORTED, "m._guard.locked()"),
    "tether.engine.sandbox.session_cgroups:_made": (AS_IMPORTED, "len(m._made)"),
    "tether.engine.sandbox.session_cgroups:_swept": (AS_IMPORTED, "m._swept"),
    "tether.engine.sandbox.session_dirs:_guard": (AS_IMPORTED, "m._guard.locked()"),
    "tether.engine.sandbox.session_dirs:_held": (AS_IMPORTED, "len(m._held)"),
    "tether.engine.sandbox.session_dirs:_swept": (AS_IMPORTED, "len(m._swept)"),
    "tether.engine.sessions.lease:_TOKEN": (PER_PROCESS, "m._TOKEN"),
    "tether.engine.sessions.lease:os.register_at_fork()": (PER_PROCESS, "m._TOKEN"),
    "tether.engine.workspace:_PROCESS_GRANTS": (AS_IMPORTED, "len(m._PROCESS_GRANTS)"),
    "tether.engine.web.pinned:_ssl_context": (AS_IMPORTED, "m._ssl_context.cache_info().currsize"),
    "tether.rpc.acp.client_terminal:_forms": (AS_IMPORTED, "len(m._forms)"),
    "tether.warm.fork_server:FORWARDED": (PLATFORM, "sorted(m.FORWARDED)"),
    "tether.warm.identity:SO_PEERPIDFD": (PLATFORM, "m.SO_PEERPIDFD"),
    "tether.warm.worker:_SERVERS_STREAMS": (AS_IMPORTED, "len(m._SERVERS_STREAMS)"),
}

# Decided when used (no longer at import), or the interpreter's own: a worker's must follow its
# launcher, as a cold start's does, and differ from the server's (else nothing was shown).
FOLLOWS_THE_LAUNCHER = {
    "tether.transports.stdio:uses_thread()": "m.uses_thread()",
    "tether.engine.sandbox.session_sandbox:_system()": "m._system('/nonexistent/rm', 'rm')",
    "tempfile:gettempdir()": "m.gettempdir()",
    "locale:LC_CTYPE": "m.setlocale(m.LC_CTYPE)",
    "sys:stdout": "(m.stdout.encoding, m.stdout.errors, m.stdout.line_buffering)",
    "sys:stderr": "(m.stderr.encoding, m.stderr.errors, m.stderr.write_through)",
    "os:getpriority()": "m.getpriority(m.PRIO_PROCESS, 0)",
    "os:umask()": "(m.umask(0o22), m.umask(0o22))[0]",
    "os:getcwd()": "m.getcwd()",
    "os:environ": "m.environ.get('TETHER_STDIO_THREAD')",
    "resource:RLIMIT_NOFILE": "m.getrlimit(m.RLIMIT_NOFILE)[0]",
}
# The same in server, worker and a cold start, because the server was started to match.
FIXED_BY_THE_IDENTITY = {
    "sys:flags": "tuple(m.flags)",
    "sys:warnoptions": "m.warnoptions",
    "sys:hash": "hash('tether')",
}

READS = (
    *("os.environ", "os.getenv", "os.getpid", "os.getppid", "os.getuid", "os.geteuid"),
    *("os.getgid", "os.getlogin", "os.urandom", "os.cpu_count", "os.getcwd", "os.uname"),
    *("os.path.exists", "os.path.isdir", "os.path.isfile", "os.path.expanduser", "os.access"),
    *("os.name", "os.sched_getaffinity", "os.getpriority", "os.umask", "os.register_at_fork"),
    *("sys.platform", "sys.flags", "sys.executable", "sys.version_info", "sys.prefix"),
    *("sys.stdin", "sys.stdout", "sys.stderr", "sys.argv", "sys.path", "sys.maxsize"),
    *("sys.getfilesystemencoding", "shutil.which", "uuid", "random", "secrets", "datetime"),
    *("Path.home", "Path.cwd", "tempfile", "locale", "platform", "sysconfig", "getpass"),
    "socket.gethostname",
)
CALLED = ("threading", "ctypes", "time")  # a lock, a library loaded, a clock read: when called
PROBED = ("os", "sys", "signal", "socket", "select", "resource", "time")  # hasattr / getattr
MUTATORS = {"append", "extend", "add", "update", "setdefault", "pop", "clear", "insert", "remove"}
MUTATORS |= {"discard", "popitem"}


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _nodes(node: ast.AST) -> list[ast.AST]:
    """`node` and what it holds, not entering functions or classes (run later, or apart)."""
    found, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        found.append(n)
        stack.extend(ast.iter_child_nodes(n))
    return found


def _reads(node: ast.AST, deciding: dict[str, bool]) -> set[str]:
    """What `node` reads or calls that makes it a decision."""
    out: set[str] = set()
    for n in _nodes(node):
        if isinstance(n, ast.Call):
            callee = _dotted(n.func) or ""
            if callee in ("hasattr", "getattr") and n.args and _dotted(n.args[0]) in PROBED:
                out.add(f"{callee}({_dotted(n.args[0])})")
            if deciding.get(callee):
                out.add(f"calls {callee}()")
            if callee.split(".")[0] in CALLED and "." in callee:
                out.add(callee.split(".")[0])
        name = _dotted(n) if isinstance(n, ast.Attribute | ast.Name) else None
        out |= {p for p in READS if name and (name == p or name.startswith(p + "."))}
    return out


class _Module:
    """The decisions one module makes at import, by name."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.found: dict[str, set[str]] = {}
        defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.deciding = dict.fromkeys(defs, False)
        grew = True
        while grew:  # a function of the module decides if it reads, or calls one that decides
            grew = False
            for name, fn in defs.items():
                if not self.deciding[name] and any(_reads(s, self.deciding) for s in fn.body):
                    self.deciding[name] = grew = True

    def scan(self) -> dict[str, set[str]]:
        self._statements(self.tree.body, "", set())
        self._changed_later()
        return self.found

    def _statements(self, body: list[ast.stmt], prefix: str, guard: set[str]) -> None:
        for st in body:
            if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef):
                self._cached(st, prefix)
            elif isinstance(st, ast.ClassDef):
                self._statements(st.body, f"{prefix}{st.name}.", guard)
            elif isinstance(st, ast.If):
                if _dotted(getattr(st.test, "left", st.test)) == "__name__":
                    continue  # `if __name__ == "__main__":` runs when executed, not imported
                test = guard | _reads(st.test, self.deciding)
                self._statements(st.body, prefix, test)
                self._statements(st.orelse, prefix, test)
            elif isinstance(st, ast.Try):
                for part in (st.body, st.orelse, st.finalbody, *[h.body for h in st.handlers]):
                    self._statements(part, prefix, guard)
            elif not isinstance(st, ast.Import | ast.ImportFrom):
                self._statement(st, prefix, guard)

    def _cached(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str) -> None:
        for d in fn.decorator_list:
            name = _dotted(d.func if isinstance(d, ast.Call) else d) or ""
            if name.split(".")[-1] in ("cache", "lru_cache"):
                self.found[prefix + fn.name] = {"cache"}

    def _statement(self, st: ast.stmt, prefix: str, guard: set[str]) -> None:
        value = st.value if isinstance(st, ast.Assign | ast.AnnAssign | ast.AugAssign) else st
        seen = _reads(value, self.deciding) if value is not None else set()
        if not seen:
            return
        if isinstance(st, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            names = [_dotted(t) or "?" for t in targets]
        else:
            calls = [n for n in _nodes(st) if isinstance(n, ast.Call)]
            names = [f"{_dotted(calls[0].func)}()" if calls else f"line {st.lineno}"]
        for name in names:
            self.found.setdefault(prefix + name, set()).update(seen | guard)

    def _changed_later(self) -> None:
        """Module state its functions rebind (`global`) or fill (a container's methods, an
        item set)."""
        names = {_dotted(t) for st in self.tree.body if isinstance(st, ast.Assign)
                 for t in st.targets} | {_dotted(st.target) for st in self.tree.body
                 if isinstance(st, ast.AnnAssign)}  # fmt: skip
        for fn in ast.walk(self.tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            local = {_dotted(t) for s in ast.walk(fn) if isinstance(s, ast.Assign)
                     for t in s.targets} | {a.arg for a in fn.args.args}  # fmt: skip
            for n in ast.walk(fn):
                if isinstance(n, ast.Global):
                    for name in n.names:
                        self.found.setdefault(name, set()).add("rebound")
                held = _held(n)
                if held is not None and held in names and held not in local:
                    self.found.setdefault(held, set()).add("filled")


def _held(node: ast.AST) -> str | None:
    """The container a method call fills or an item assignment sets."""
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr in MUTATORS:
        return func.value.id if isinstance(func.value, ast.Name) else None
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        return node.value.id if isinstance(node.value, ast.Name) else None
    return None


def import_time_decisions() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / "tether").rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for name, why in _Module(ast.parse(path.read_text())).scan().items():
            found[f"{module}:{name}"] = why
    return found


def test_every_decision_made_at_import_is_listed() -> None:
    found = import_time_decisions()
    unlisted = {k: sorted(v) for k, v in found.items() if k not in DECISIONS}
    assert unlisted == {}, "a module decides at import: list it, and show the worker's is right"
    assert sorted(set(DECISIONS) - set(found)) == []  # nothing listed that is no longer there


EVALUATE = """
import importlib, json, os, sys
def evaluate(probes):
    found = {}
    for key, expr in probes.items():
        module = importlib.import_module(key.split(":")[0])
        try:
            found[key] = repr(eval(expr, {"m": module}))
        except Exception as exc:
            found[key] = f"error: {exc!r}"
    return found
"""

# The launcher: its request (what it would send) and the command and environment that start its
# server, as tether/warm/launcher.py makes them.
LAUNCHER = """
import json, sys
from tether.warm import handover, launcher
request = handover.own_request([sys.argv[0], "acp"]).encode()
command, env = launcher.server_command(sys.argv[1:4], boot=sys.argv[4])
print(json.dumps({"request": request.hex(), "command": command, "env": env}))
"""

# The server, as the warm server is until its first fork (tether/warm/fork_server.py: main):
# everything preloaded, then a fork that takes the launcher's request (tether/warm/worker.py).
SERVER = (
    "import sys; i = sys.argv.index('--'); sys.path[:] = sys.argv[i + 1:]\n"
    + EVALUATE
    + """
import gc, threading
request_file, probes_file, out_file = sys.argv[1:4]
probes = json.load(open(probes_file))
from tether.warm.preload import preload
preload()
gc.collect()
gc.freeze()
server = evaluate(probes)
threads = [threading.active_count(), open("/proc/self/status").read().split("Threads:")[1].split()[0]]
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    from tether.warm.handover import Request
    from tether.warm.worker import adopt
    request = Request.decode(bytes.fromhex(open(request_file).read())[4:])
    adopt(request, [os.dup(0), os.dup(1), os.dup(2)], [read])
    os.write(write, json.dumps(evaluate(probes)).encode())
    os._exit(0)
os.close(write)
with os.fdopen(read) as f:
    worker = json.loads(f.read())
os.waitpid(pid, 0)
json.dump({"server": server, "worker": worker, "threads": threads}, open(out_file, "w"))
"""
)

COLD = EVALUATE + "print(json.dumps(evaluate(json.load(open(sys.argv[1])))))"


def _probes() -> dict[str, str]:
    found = {k: probe for k, (_, probe) in DECISIONS.items()}
    return {**found, **FOLLOWS_THE_LAUNCHER, **FIXED_BY_THE_IDENTITY}


def _launcher_env(tmp_path: Path) -> dict[str, str]:
    """A launcher's environment unlike the server's in every way the probes can see."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "rm").symlink_to(shutil.which("rm") or "/bin/rm")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "PYTHON", "LC_"))}
    return {**env, "PATH": f"{tools}{os.pathsep}{env.get('PATH', '')}", "TMPDIR": str(tmp),
            "TETHER_STDIO_THREAD": "1", "PYTHONIOENCODING": "latin-1", "LC_ALL": "C",
            "PYTHONHASHSEED": "123", "PYTHONWARNINGS": "ignore::ResourceWarning",
            "PYTHONPATH": str(REPO), "LANG": "C"}  # fmt: skip


def _launcher_state() -> None:
    """The launcher's process state, unlike the test's (the server starts from the test)."""
    import resource

    os.nice(3)
    os.umask(0o027)
    resource.setrlimit(resource.RLIMIT_NOFILE, (300, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def _run(command: list[str], **how: Any) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(command, capture_output=True, timeout=120, **how)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return done


@pytest.mark.slow
def test_each_decision_is_right_in_a_worker(tmp_path: Path) -> None:
    probes, out, request = tmp_path / "probes.json", tmp_path / "out.json", tmp_path / "request"
    probes.write_text(json.dumps(_probes()))
    env, cwd = _launcher_env(tmp_path), tmp_path / "project"
    cwd.mkdir()
    args = [str(request), str(probes), str(out), SERVER]
    how = {"env": env, "cwd": cwd, "preexec_fn": _launcher_state}
    said = json.loads(_run([sys.executable, "-c", LAUNCHER, *args], **how).stdout)
    request.write_text(said["request"])
    _run(said["command"], env=said["env"], cwd="/")  # the server, from the test (nice 0, ...)
    cold = json.loads(_run([sys.executable, "-c", COLD, str(probes)], **how).stdout)
    seen = json.loads(out.read_text())
    server, worker = seen["server"], seen["worker"]
    assert seen["threads"] == [1, "1"]  # it forks from its one thread: every lock is free
    wrong = {}
    for key, (kind, _) in DECISIONS.items():
        if kind == PER_PROCESS:
            right = worker[key] != server[key] and worker[key] != cold[key]
        elif kind == AS_IMPORTED:
            right = server[key] == cold[key]  # what the worker starts with is the server's
        else:
            right = worker[key] == cold[key]
        if not right or "error:" in server[key] + worker[key] + cold[key]:
            wrong[key] = {"server": server[key], "worker": worker[key], "cold": cold[key]}
    for key in FOLLOWS_THE_LAUNCHER:
        if not worker[key] == cold[key] != server[key]:
            wrong[key] = {"server": server[key], "worker": worker[key], "cold": cold[key]}
    for key in FIXED_BY_THE_IDENTITY:
        if not server[key] == worker[key] == cold[key]:
            wrong[key] = {"server": server[key], "worker": worker[key], "cold": cold[key]}
    assert wrong == {}


def test_a_warm_server_forks_from_its_one_thread(shared_warm: Any, home: Path) -> None:
    server = shared_warm.start(home)
    status = Path(f"/proc/{server}/status").read_text()
    assert "Threads:\t1\n" in status
