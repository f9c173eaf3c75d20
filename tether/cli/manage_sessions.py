"""`tether sessions list | show | export | delete`: the session store from the command line."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import anyio

from tether.engine.local.nofollow import create_new
from tether.engine.sessions.export import to_json, to_markdown
from tether.engine.sessions.store import Store
from tether.errors import SeamError
from tether.paths import data_dir


def run_sessions(args: argparse.Namespace) -> int:
    if getattr(args, "cwd", None):
        args.cwd = os.path.abspath(args.cwd)
    return anyio.run(_run, args)


async def _run(args: argparse.Namespace) -> int:
    home = data_dir()
    if not (home / "tether.db").exists():
        print(f"no sessions yet ({home / 'tether.db'} does not exist)", file=sys.stderr)
        return 1 if args.sessions_command != "list" else 0
    store = Store(home / "tether.db")
    try:
        return await _command(store, args, home)
    finally:
        await store.close()


async def _command(store: Store, args: argparse.Namespace, home: os.PathLike[str]) -> int:
    if args.sessions_command == "list":
        for row in await store.list(args.cwd or None, None, args.limit):
            print(f"{row.id}  {row.updated_at}  {row.cwd}  {row.title or '(untitled)'}")
        return 0
    session = await store.load(args.session_id)
    if session is None:
        print(f"no session {args.session_id!r}", file=sys.stderr)
        return 1
    if args.sessions_command == "delete":
        await store.delete(session.id)
        spill = os.path.join(home, "spill", session.id)
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(spill, ignore_errors=True))
        print(f"deleted {session.id}")
        return 0
    events = await store.events(session.id)
    if args.sessions_command == "export" and args.format == "json":
        text = json.dumps(to_json(session, events), indent=2, ensure_ascii=False) + "\n"
    else:
        text = to_markdown(session, events)
    output = getattr(args, "output", None)
    if not output:
        sys.stdout.write(text)
        return 0
    return await anyio.to_thread.run_sync(_write_new, output, text)


def _write_new(output: str, text: str) -> int:
    """A new file, never written through a link (the project may hold one under that name)."""
    path = Path(os.path.abspath(output))
    try:
        create_new(path, text.encode("utf-8"))
    except FileExistsError:
        print(f"not exported: {path} exists; give another path", file=sys.stderr)
        return 1
    except (SeamError, OSError) as exc:
        why = exc.message if isinstance(exc, SeamError) else exc.strerror or str(exc)
        print(f"not exported: {why} ({path})", file=sys.stderr)
        return 1
    return 0
