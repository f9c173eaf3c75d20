"""The tools' specs (what the model is shown of each: its name, description and JSON schema),
kept in a small file so that a start offers the tools without importing them: each tool's
module loads when a call first names it (engine/registry.py's DeferredTool).

A spec is made from the tool's argument Struct and docstring as its module loads; the tool
modules, and what they import, were the largest part of tether's own on a cold start's way
to its first answer (about 20 ms of 25 modules here). The file is keyed by everything the
specs are made from: tether's, Python's and msgspec's versions, the `[web]` table (which web
tools there are, and their limits), and each of tether's source files loaded when they were
made (its size and modification time: an edited or upgraded tool makes them afresh). A
missing, stale or unreadable file: the specs are made as before, and the file written for the
next start.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

import msgspec

from tether import __version__
from tether.engine.providers.base import ToolSpec
from tether.engine.registry import DeferredTool, ToolDef
from tether.schemas.web import WebConfig

CACHE_FILE = "tool-specs.json"

Stamp = tuple[str, int, int]  # a source file: its path, modification time (ns) and size


class _Kept(msgspec.Struct):
    key: str
    sources: list[Stamp]
    specs: list[ToolSpec]


def deferred(web: WebConfig, cache: Path, *, skills: bool = True) -> list[DeferredTool]:
    """The tools `web` and `skills` configure, deferred, their specs read from `cache` or made
    (and kept)."""
    path = cache / CACHE_FILE
    key = spec_key(web, skills=skills)
    loader = _Loader(web, skills)
    specs = read_specs(path, key)
    if specs is None:
        specs = loader.load_all()
        write_specs(path, key, specs)
    return [DeferredTool(spec, functools.partial(loader.load, spec.name)) for spec in specs]


def spec_key(web: WebConfig, *, skills: bool = True) -> str:
    """What the specs are made from, besides the source files."""
    parts = (__version__, sys.version, msgspec.__version__, _web_key(web), f"skills={skills}")
    return "\n".join(parts)


def _web_key(web: WebConfig) -> str:
    return msgspec.json.encode(web).decode()


def read_specs(path: Path, key: str) -> list[ToolSpec] | None:
    """The specs kept at `path` for `key`, if every source they were made from is unchanged."""
    try:
        kept = msgspec.json.decode(path.read_bytes(), type=_Kept)
    except (OSError, msgspec.DecodeError):
        return None
    if kept.key != key or not kept.sources or any(_changed(s) for s in kept.sources):
        return None
    return kept.specs


def write_specs(path: Path, key: str, specs: list[ToolSpec]) -> None:
    """Keep `specs` for the next start (owner-only, replaced atomically); best effort."""
    kept = _Kept(key, _sources(), specs)
    tmp = path.with_name(f"{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(msgspec.json.encode(kept))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def _sources() -> list[Stamp]:
    """Each of tether's source files loaded so far (the specs were made from some of them)."""
    found: list[Stamp] = []
    for name, module in list(sys.modules.items()):
        file: Any = getattr(module, "__file__", None)
        if (name == "tether" or name.startswith("tether.")) and isinstance(file, str):
            try:
                st = os.stat(file)
            except OSError:
                continue
            found.append((file, st.st_mtime_ns, st.st_size))
    return sorted(found)


def _changed(stamp: Stamp) -> bool:
    file, mtime_ns, size = stamp
    try:
        st = os.stat(file)
    except OSError:
        return True
    return (st.st_mtime_ns, st.st_size) != (mtime_ns, size)


class _Loader:
    """The tools of one configuration, each loaded once, when first asked for."""

    def __init__(self, web: WebConfig, skills: bool) -> None:
        self._web = web
        self._skills = skills
        self._loaded: dict[str, ToolDef] = {}

    def load(self, name: str) -> ToolDef:
        from tether.tools import BUILT_IN, built_in

        if name not in self._loaded:
            if name in dict(BUILT_IN):
                self._loaded[name] = built_in(name)
            else:
                self._web_tools()
        return self._loaded[name]

    def load_all(self) -> list[ToolSpec]:
        from tether.tools import catalog

        tools = catalog(self._web, skills=self._skills)
        self._loaded.update((t.name, t) for t in tools)
        return [t.spec for t in tools]

    def _web_tools(self) -> None:
        from tether.tools.web_tools import web_tools

        self._loaded.update((t.name, t) for t in web_tools(self._web))
