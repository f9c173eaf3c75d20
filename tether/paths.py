"""Where tether keeps things: the data directory (sessions, spill files, caches) and the config
file. Imports nothing heavy: the startup path asks these before the engine is loaded."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CONFIG_ENV = "TETHER_CONFIG"
HOME_ENV = "TETHER_HOME"


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """TETHER_HOME overrides the platform's user data directory (tests, portable installs)."""
    env = os.environ if env is None else env
    home = env.get(HOME_ENV)
    if home:
        return Path(home)
    import platformdirs

    return Path(platformdirs.user_data_dir("tether", appauthor=False))


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """TETHER_CONFIG when set, else `config.toml` in the platform's user config directory."""
    env = os.environ if env is None else env
    override = env.get(CONFIG_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("tether", appauthor=False)) / "config.toml"
