"""Config errors: each names its key and its line, since the file is the user's and they fix it
by hand."""

from __future__ import annotations

import re

import msgspec

from tether.engine.config.toml_lines import Key

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")


def key_name(key: Key) -> str:
    return ".".join(p if _BARE_KEY.match(p) else msgspec.json.encode(p).decode() for p in key)
