"""What must be right before `tether ask` spawns its agent, and `tether doctor` fails on: the
config files usable (a named file that is missing, unreadable, or not TOML stops the run), a
default model asked for (`--model`, TETHER_MODEL, `[defaults] model`) that exists, and a
TETHER_HOME tether can write in. Bad keys are not here: each is left out alone, a warning."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import msgspec

from tether.engine.config.catalog import ModelCatalog
from tether.engine.config.resolve import Setup
from tether.paths import HOME_ENV, data_dir


class Findings(msgspec.Struct):
    setup: Setup
    catalog: ModelCatalog
    fatal: list[str]  # each stops `tether ask` (exit 2), one line each
    warnings: list[str]  # each bad key, left out alone


def startup_check(
    env: Mapping[str, str],
    cwd: Path | None = None,
    *,
    model: str | None = None,
    script: str | None = None,
) -> Findings:
    from tether.engine.config.load import catalog_for
    from tether.engine.config.resolve import load_setup

    setup = load_setup(env, cwd)
    catalog = catalog_for(setup, script=script, model_override=model, env=env)
    fatal = [i.render() for i in setup.fatal]
    fatal += catalog.unusable_choices
    fatal += home_problems(env)
    warnings = [f"{i.render()} (ignored)" for i in setup.issues]
    return Findings(setup, catalog, fatal, warnings)


def home_problems(env: Mapping[str, str]) -> list[str]:
    """Why tether cannot keep its sessions in its data directory, if it cannot."""
    home = data_dir(env)
    name = f"{HOME_ENV} {home}" if env.get(HOME_ENV) else f"the data directory {home}"
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=home):
            pass
    except OSError as exc:
        return [f"{name} is not writable ({exc.strerror or exc}); sessions cannot be kept"]
    if not os.access(home, os.W_OK | os.X_OK):
        return [f"{name} is not writable; sessions cannot be kept"]
    return []
