"""Writing one setting into the user's config file (`/model --persist`): a careful line edit
that keeps every comment, blank line and other key as the user wrote them, checked by parsing
the result before it replaces the file (atomically, its mode kept)."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from tether.engine.config.toml_lines import index_keys
from tether.errors import ConfigError, ConfigIssue

# `key = "value"  # comment`: the value (a one-line string) between what stays on each side.
_STRING_VALUE = re.compile(r"""^(?P<head>[^=]*=\s*)(?:"(?:[^"\\]|\\.)*"|'[^']*')(?P<tail>.*)$""")
_DEFAULTS_HEADER = re.compile(r"^\s*\[\s*defaults\s*\]\s*(#.*)?$")


def persist_default_model(path: Path, model_id: str) -> None:
    """Make `model_id` the `[defaults] model` of the file at `path` (created when missing).
    ConfigError when the file cannot be changed so (it is broken, or the key is written in a
    shape a line edit should not touch); the file is then left as it was."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    new = _with_default_model(text, model_id, path)
    from tether.engine.config.file import parse_config

    checked = parse_config(new, path)  # the edit made a valid file saying what was asked
    if checked.file.defaults.model != model_id:
        _refuse(path, None, "the edit did not set [defaults] model; set it by hand")
    _replace(path, new)


def _with_default_model(text: str, model_id: str, path: Path) -> str:
    value = json.dumps(model_id, ensure_ascii=False)  # a TOML basic string
    lines = text.splitlines(keepends=True)
    where = index_keys(text) if text else {}
    at = where.get(("defaults", "model"))
    if at is not None:
        line = lines[at - 1]
        m = _STRING_VALUE.match(line.rstrip("\r\n"))
        if m is None or not m["head"].strip().removesuffix("=").strip().endswith("model"):
            _refuse(path, at, "[defaults] model is not a one-line string here; set it by hand")
        assert m is not None
        ending = line[len(line.rstrip("\r\n")) :] or "\n"
        lines[at - 1] = f"{m['head']}{value}{m['tail']}{ending}"
        return "".join(lines)
    for i, line in enumerate(lines):
        if _DEFAULTS_HEADER.match(line.rstrip("\r\n")):
            lines.insert(i + 1, f"model = {value}\n")
            return "".join(lines)
    if ("defaults",) in where:  # an inline table or dotted keys: not a line edit's job
        _refuse(path, where[("defaults",)], "[defaults] is not a table header here; set it by hand")
    sep = "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
    return f"{text}{sep}[defaults]\nmodel = {value}\n"


def _refuse(path: Path, line: int | None, message: str) -> None:
    raise ConfigError(path, [ConfigIssue(line, "defaults.model", message)])


def _replace(path: Path, text: str) -> None:
    """Write `text` in a new file beside `path`, then rename it over: a crash leaves one or
    the other whole. The file keeps its mode (new ones are the user's only)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    fd, tmp = tempfile.mkstemp(prefix=".config-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path.resolve() if path.is_symlink() else path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
