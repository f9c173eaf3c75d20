"""The house rules, checked on the source: no import circle anywhere in `tether/` (counting imports
inside functions and under TYPE_CHECKING), the dependency rules between the rooms, modules of a
readable size, module names that do not repeat, and a `docs/architecture.md` whose every cited
path and name exists and which names every module. Class sizes are a report, not a rule
(`python -m tests.support.class_sizes`): a cap became a target classes were packed up to."""

from __future__ import annotations

import ast
import re
from collections import Counter
from functools import cache
from pathlib import Path

from tests.support.class_sizes import class_sizes
from tests.support.harness import REPO

PACKAGE = REPO / "tether"
MAX_LINES = 500  # wire types (schemas/) aside


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@cache
def imports() -> dict[str, set[str]]:
    """Every tether module each module imports, wherever the import statement is."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        found: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                    ).strip(".")
                found.add(base)
                found.update(f"{base}.{a.name}" for a in node.names)
        graph[name] = {m for m in found if m in known and m != name and not _is_package(m)}
    return graph


def _is_package(name: str) -> bool:
    return modules()[name].name == "__init__.py"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_through_others() -> None:
    assert _cycles(imports()) == []


def _room(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:3]) if parts[1] == "engine" and len(parts) > 3 else ".".join(parts[:2])


FORBIDDEN = {  # room -> rooms it may never import
    "tether.engine": (
        "tether.rpc",
        "tether.cli",
        "tether.tools",
        "tether.command_policy",
        "tether.warm",
    ),
    "tether.tools": ("tether.rpc", "tether.cli", "tether.warm"),
    # command safety judges command lines; the tools call it, it calls no tool
    "tether.command_policy": ("tether.rpc", "tether.cli", "tether.tools", "tether.warm"),
    # warm starts are started by the command line and import the fronts and the engine; the
    # server is given the command line its workers run when it boots
    "tether.warm": ("tether.cli",),
    "tether.schemas": (
        "tether.engine",
        "tether.rpc",
        "tether.tools",
        "tether.cli",
        "tether.transports",
        "tether.command_policy",
        "tether.warm",
    ),
    "tether.transports": (
        "tether.rpc",
        "tether.engine",
        "tether.tools",
        "tether.cli",
        "tether.command_policy",
        "tether.warm",
    ),
    "tether.rpc": ("tether.cli", "tether.warm"),
}


def test_the_dependency_rules_hold() -> None:
    broken = []
    for module, targets in imports().items():
        for room, never in FORBIDDEN.items():
            if module == room or module.startswith(room + "."):
                broken += [f"{module} -> {t}" for t in targets if t.startswith(never)]
    assert broken == []


def test_modules_stay_readable() -> None:
    long_modules = [
        f"{name}: {len(path.read_text().splitlines())} lines"
        for name, path in modules().items()
        if len(path.read_text().splitlines()) > MAX_LINES and not name.startswith("tether.schemas")
    ]
    assert long_modules == []


def test_the_class_size_report_lists_every_class() -> None:
    """The report (`tests/support/class_sizes.py`) reads the same tree: every class, largest first."""
    sizes = class_sizes(PACKAGE)
    defined = sum(
        isinstance(node, ast.ClassDef)
        for path in modules().values()
        for node in ast.walk(ast.parse(path.read_text()))
    )
    assert len(sizes) == defined
    assert sizes == sorted(sizes, key=lambda c: (-c.methods, -c.lines, c.name))


def test_no_module_name_is_used_three_times() -> None:
    names = Counter(p.stem for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")
    assert [n for n, count in names.items() if count >= 3] == []


# --- docs/architecture.md -----------------------------------------------------------------------

ARCHITECTURE = REPO / "docs" / "architecture.md"
_PATH = re.compile(r"`((?:tether|tests|editors|bench|docs)/[\w./-]*)`")
_DOTTED = re.compile(r"`(tether(?:\.\w+)+)`")


def test_every_path_and_name_the_architecture_cites_exists() -> None:
    text = ARCHITECTURE.read_text()
    missing = [p for p in _PATH.findall(text) if not (REPO / p.rstrip("/")).exists()]
    rooms = {m.split(".")[1] for m in modules() if m.count(".") >= 1}
    for dotted in _DOTTED.findall(text):
        if dotted.split(".")[1] not in rooms:
            continue  # not a module path (LSP command names such as `tether.prompt`)
        if dotted in modules():
            continue
        module, _, attr = dotted.rpartition(".")
        while module and module not in modules():
            module, _, outer = module.rpartition(".")
            attr = f"{outer}.{attr}"
        source = modules()[module].read_text() if module else ""
        if not module or not re.search(
            rf"\b(def|class)\s+{re.escape(attr.split('.')[-1])}\b|^{re.escape(attr)}\s*[:=]",
            source,
            re.M,
        ):
            missing.append(dotted)
    assert missing == []


def test_the_architecture_names_every_module() -> None:
    text = ARCHITECTURE.read_text()
    cited = {REPO / p for p in _PATH.findall(text)}
    unnamed = [
        str(path.relative_to(REPO))
        for path in modules().values()
        if path.name != "__init__.py" and path not in cited and f"`{path.name}`" not in text
    ]
    assert unnamed == []


def _tree_rooms() -> set[str]:
    """The rooms the architecture's tree draws: `tether/x/` and, under engine/, `tether/engine/y/`."""
    block = ARCHITECTURE.read_text().split("```")[1]
    rooms: set[str] = set()
    for line in block.splitlines():
        found = re.match(r"^( {2}| {4})(\w+)/\s", line)
        if found:
            indent, name = found.groups()
            rooms.add(f"tether/{name}" if indent == "  " else f"tether/engine/{name}")
    return rooms


def test_the_architecture_tree_draws_every_room() -> None:
    """A package moved or renamed (engine/commands/ became engine/slash/) moves in the tree too."""
    parts = [p.relative_to(PACKAGE).parts for p in PACKAGE.rglob("__init__.py")]
    packages = {
        "/".join(("tether", *p[:-1]))
        for p in parts
        if len(p) == 2 or (len(p) == 3 and p[0] == "engine")
    }
    assert _tree_rooms() == packages


def test_no_package_exports_a_name_its_submodule_has() -> None:
    """Importing a submodule sets the package's attribute of that name to the module: a
    function re-exported under the same name is gone from then on, in whatever order the
    modules happen to load (lazily, or all at once in a warm server)."""
    clashes = []
    for init in PACKAGE.rglob("__init__.py"):
        subs = {p.stem for p in init.parent.glob("*.py")} | {
            d.name for d in init.parent.iterdir() if (d / "__init__.py").exists()
        }
        for node in ast.parse(init.read_text()).body:
            named: set[str] = set()
            if isinstance(node, ast.ImportFrom):
                named = {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                named = {node.name}
            elif isinstance(node, ast.Assign):
                named = {t.id for t in node.targets if isinstance(t, ast.Name)}
            clashes += [f"{init.parent.name}.{n}" for n in sorted(named & subs)]
    assert clashes == []


# --- tests/ -------------------------------------------------------------------------------------

TESTS = REPO / "tests"
# tests/ holds rooms of test modules (each a package, named for the layer it tests), the helpers
# every room shares (support/) and vendored data (fixtures/); nothing else sits at its root.
TEST_ROOMS = {
    "cli",
    "command_policy",
    "editors",
    "engine",
    "lsp",
    "mcp",
    "providers",
    "repo",
    "rpc",
    "sandbox",
    "sessions",
    "tools",
    "warm",
    "web",
}
TEST_ROOT = {"__init__.py", "conftest.py", "support", "fixtures", *TEST_ROOMS}


def test_the_tests_sit_in_rooms_and_the_helpers_in_support() -> None:
    """A test module at tests/ root, or a helper beside the tests, is put where it belongs:
    test_*.py in the room of the layer it tests, anything else in tests/support/."""
    stray = sorted(
        p.name for p in TESTS.iterdir() if p.name not in TEST_ROOT and p.name != "__pycache__"
    )
    misplaced = [
        str(p.relative_to(TESTS))
        for room in TEST_ROOMS
        for p in (TESTS / room).glob("*.py")
        if not p.name.startswith("test_") and p.name not in ("__init__.py", "conftest.py")
    ]
    tests_in_support = [str(p.relative_to(TESTS)) for p in (TESTS / "support").rglob("test_*.py")]
    no_package = [room for room in TEST_ROOMS if not (TESTS / room / "__init__.py").exists()]
    assert (stray, misplaced, tests_in_support, no_package) == ([], [], [], [])
