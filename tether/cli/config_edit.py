"""`tether config edit`: the config file in the user's editor ($VISUAL, else $EDITOR; created
from the commented example when missing), then checked as `tether doctor` checks it, every
problem printed with its line."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO


def edit_config(path: Path, env: Mapping[str, str], out: TextIO = sys.stdout) -> int:
    """0 when the saved file is valid, 1 when it has errors, 2 when no editor ran."""
    from tether.engine.config.file import write_example

    editor = env.get("VISUAL") or env.get("EDITOR")
    if not editor:
        print("set $VISUAL or $EDITOR to the editor to use (e.g. EDITOR=nano)", file=sys.stderr)
        return 2
    if not path.exists():
        write_example(path)
        print(f"wrote the commented example to {path}", file=out)
    try:
        done = subprocess.run([*shlex.split(editor), str(path)], check=False)
    except OSError as exc:
        print(f"cannot run the editor {editor!r}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if done.returncode != 0:
        print(f"the editor exited with code {done.returncode}; checking the file anyway", file=out)
    return report(path, env, out)


def report(path: Path, env: Mapping[str, str], out: TextIO) -> int:
    """The file checked like `tether doctor` does: `ok` or each error with its line."""
    from tether.engine.config.file import load_config
    from tether.engine.config.resolve import resolve
    from tether.errors import ConfigError

    try:
        resolve(load_config(path, env=env), env=env)
    except ConfigError as exc:
        n = len(exc.issues)
        errors = f"{n} error{'s' if n > 1 else ''}"
        whole = any(i.message.startswith(("TOML syntax error", "cannot read")) for i in exc.issues)
        why = "tether cannot use the file" if whole else "each is ignored alone; the rest applies"
        print(f"{path}: {errors} ({why})", file=out)
        for issue in exc.issues:
            print(f"  error: {issue.render(path)}", file=out)
        return 1
    print(f"{path}: ok", file=out)
    return 0
