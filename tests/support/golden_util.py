"""Golden transcripts: frames normalised (ids, paths, times) and compared with tests/support/golden/."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden"
_HEX = re.compile(r"\b(sess_|round_)?[0-9a-f]{12,32}\b")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def normalise(frames: list[dict[str, Any]], paths: dict[str, str]) -> list[dict[str, Any]]:
    text = json.dumps(frames, sort_keys=True)
    for real, name in sorted(paths.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(real, name)
    text = _HEX.sub(lambda m: f"<{(m.group(1) or 'id').rstrip('_')}>", text)
    text = _TIME.sub("<time>", text)
    out: list[dict[str, Any]] = json.loads(text)
    for frame in out:
        update = frame.get("params", {}).get("update", {})
        if update.get("sessionUpdate") == "usage_update" and "cost" not in update:
            # An estimate: chars/4 of a system prompt naming this machine's OS and temp paths.
            update["used"] = "<estimated>"
    return out


def check_golden(name: str, frames: list[dict[str, Any]], paths: dict[str, str]) -> None:
    """Compare with tests/support/golden/NAME.json; TETHER_UPDATE_GOLDEN=1 rewrites the file."""
    got = normalise(frames, paths)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("TETHER_UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        if os.environ.get("TETHER_UPDATE_GOLDEN") != "1":
            raise AssertionError(f"golden file {path.name} was missing and has been written")
    want = json.loads(path.read_text())
    assert got == want, f"transcript differs from {path.name}"
