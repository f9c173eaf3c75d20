"""The config files in effect, merged: the user's file, then the project's
(`.tether/config.toml` at the root of the repository holding the working folder, else in the
folder itself), which wins the keys it may set (`project_rules.py`). Each bad or refused key is
reported and left out alone (`lenient.py`); a file that cannot be used at all (unreadable, not
TOML) is `fatal`, as is a file TETHER_CONFIG names that does not exist (`missing`): `tether ask`
stops on it, `tether acp` logs it and goes on without that file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from tether.engine.config.file import Config, syntax_issue
from tether.engine.config.toml_lines import Key, index_keys, line_of
from tether.errors import ConfigIssue
from tether.paths import CONFIG_ENV, config_path

PROJECT_FILE = Path(".tether") / "config.toml"
PROJECT_DIR_ENV = "TETHER_PROJECT_DIR"  # the folder `tether ask --cwd` runs in, for its agent
# Set by `tether ask` for its agent once it has printed the config's problems on stderr: the
# agent then logs them without telling them again in a notice.
SHOWN_ENV = "TETHER_CONFIG_PROBLEMS_SHOWN"


class Layers(msgspec.Struct):
    config: Config | None  # the files merged; None when there is none
    issues: list[ConfigIssue] = msgspec.field(default_factory=list[ConfigIssue])
    fatal: list[ConfigIssue] = msgspec.field(default_factory=list[ConfigIssue])
    # TETHER_CONFIG names a file that does not exist: `ask` and `doctor` stop on it; `acp`
    # logs it (an editor's agent keeps serving).
    missing: ConfigIssue | None = None
    user: Path | None = None  # the user's file, when it was read
    project: Path | None = None  # the project's file, when it was read


def project_root(folder: Path) -> Path:
    """The repository root holding `folder` (a `.git` directory or file), else `folder`."""
    for place in (folder, *folder.parents):
        if (place / ".git").exists():
            return place
    return folder


def project_config_path(env: Mapping[str, str], cwd: Path | None = None) -> Path:
    folder = Path(env.get(PROJECT_DIR_ENV) or cwd or os.getcwd()).absolute()
    return project_root(folder) / PROJECT_FILE


def load_layers(env: Mapping[str, str], cwd: Path | None = None) -> Layers:
    layers = Layers(None)
    user_path = config_path(env)
    user = _read(user_path, layers, named=bool(env.get(CONFIG_ENV)))
    project_path = project_config_path(env, cwd)
    project = None
    if not _same(project_path, user_path):
        project = _read(project_path, layers, named=False)
    layers.user = user_path if user is not None else None
    layers.project = project_path if project is not None else None
    if user is None and project is None:
        return layers
    # The checks load with a file to read: most starts have none.
    from tether.engine.config.lenient import check_leniently

    doc: dict[str, Any] = {}
    lines: dict[Key, int] = {}
    files: dict[Key, Path] = {}
    for path, read in ((user_path, user), (project_path, project)):
        if read is None:
            continue
        text, part = read
        part_lines = index_keys(text)
        if path == project_path:
            _refuse(part, part_lines, path, layers)
        _, issues = check_leniently(part, part_lines, {}, path)
        layers.issues += issues
        _merge(doc, part, part_lines, path, (), lines, files)
    file, left = check_leniently(doc, lines, files, user_path)
    layers.issues += left
    main = project_path if user is None else user_path
    layers.config = Config(file, main, lines, files)
    return layers


def _read(path: Path, layers: Layers, *, named: bool) -> tuple[str, dict[str, Any]] | None:
    import tomllib

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if named:
            why = f"no such file (named by {CONFIG_ENV}; {CONFIG_ENV}=/dev/null reads none)"
            layers.missing = ConfigIssue(None, "", why, path)
        return None
    except (OSError, UnicodeDecodeError) as exc:
        layers.fatal.append(ConfigIssue(None, "", f"cannot read the file: {exc}", path))
        return None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        layers.fatal.append(syntax_issue(exc, text)._replace(path=path))
        return None


def _refuse(doc: dict[str, Any], lines: dict[Key, int], path: Path, layers: Layers) -> None:
    from tether.engine.config.issues import key_name
    from tether.engine.config.lenient import drop
    from tether.engine.config.project_rules import refusals

    for key, why in refusals(doc):
        layers.issues.append(ConfigIssue(line_of(lines, key), key_name(key), why, path))
        drop(doc, key)


def _merge(
    into: dict[str, Any],
    part: dict[str, Any],
    part_lines: dict[Key, int],
    path: Path,
    at: Key,
    lines: dict[Key, int],
    files: dict[Key, Path],
) -> None:
    """`part` over `into`, table by table; each key's line and file follow the value kept."""
    from tether.engine.config.project_rules import ADDED_TO

    for name, value in part.items():
        key = (*at, name)
        if key in part_lines:
            lines[key], files[key] = part_lines[key], path
        old = into.get(name)
        if isinstance(value, dict) and isinstance(old, dict):
            _merge(old, value, part_lines, path, key, lines, files)
        elif key in ADDED_TO and isinstance(value, list) and isinstance(old, list):
            into[name] = [*old, *value]
        else:
            into[name] = value
            _mark(value, key, part_lines, path, lines, files)


def _mark(
    value: Any,
    key: Key,
    part_lines: dict[Key, int],
    path: Path,
    lines: dict[Key, int],
    files: dict[Key, Path],
) -> None:
    if isinstance(value, dict):
        for name, inner in value.items():
            sub = (*key, str(name))
            if sub in part_lines:
                lines[sub], files[sub] = part_lines[sub], path
            _mark(inner, sub, part_lines, path, lines, files)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False
