"""The tools' specs kept in a file (tether/tools/tool_specs.py): what the model is shown is
byte for byte what the tools' modules make, a changed configuration or source makes them
afresh, and a start that reads them loads no tool's module until a call names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from tests.support.harness import REPO
from tether.engine.registry import Registry
from tether.schemas.web import WebConfig
from tether.tools import catalog, deferred_catalog
from tether.tools.tool_specs import CACHE_FILE, read_specs, spec_key, write_specs


def _encoded(tools: Registry) -> bytes:
    return msgspec.json.encode(tools.specs())


def test_kept_specs_are_the_made_ones_byte_for_byte(tmp_path: Path) -> None:
    for web in (WebConfig(), WebConfig(fetch_local=False, search_max_results=3)):
        made = msgspec.json.encode([t.spec for t in catalog(web)])
        first = deferred_catalog(web, tmp_path)  # made, and kept
        assert (tmp_path / CACHE_FILE).exists()
        kept = deferred_catalog(web, tmp_path)  # read from the file
        assert read_specs(tmp_path / CACHE_FILE, spec_key(web)) is not None
        assert _encoded(Registry(first)) == made
        assert _encoded(Registry(kept)) == made


def test_a_changed_configuration_makes_them_afresh(tmp_path: Path) -> None:
    names = [t.name for t in deferred_catalog(WebConfig(), tmp_path)]
    assert "fetch_local" in names
    fewer = WebConfig(fetch_local=False, search=False)
    assert read_specs(tmp_path / CACHE_FILE, spec_key(fewer)) is None
    narrowed = [t.name for t in deferred_catalog(fewer, tmp_path)]
    assert narrowed == [n for n in names if n not in ("fetch_local", "web_search")]
    longer = WebConfig(search_timeout_ms=1000, search_max_results=20)
    assert spec_key(longer) != spec_key(WebConfig())


def test_a_changed_source_file_makes_them_afresh(tmp_path: Path) -> None:
    path, key = tmp_path / CACHE_FILE, spec_key(WebConfig())
    write_specs(path, key, [t.spec for t in catalog()])
    assert read_specs(path, key) is not None
    source = tmp_path / "tool_module.py"  # stands for one of tether's source files
    source.write_text("x = 1\n")
    doc = json.loads(path.read_text())
    assert any(file.endswith("tether/tools/files.py") for file, _, _ in doc["sources"])
    st = source.stat()
    doc["sources"].append([str(source), st.st_mtime_ns, st.st_size])
    path.write_text(json.dumps(doc))
    assert read_specs(path, key) is not None
    source.write_text("x = 22\n")  # edited
    assert read_specs(path, key) is None
    source.unlink()
    assert read_specs(path, key) is None
    path.write_text("{not json")
    assert read_specs(path, key) is None


# A start's view: the specs read from the file, no tool module loaded until a call names one.
DEFERRED = """
import sys
from pathlib import Path
import msgspec
from tether.engine.registry import Registry
from tether.tools import deferred_catalog
registry = Registry(deferred_catalog(None, Path(sys.argv[1])))
specs = msgspec.json.encode(registry.specs())
before = sorted(m for m in sys.modules if m.startswith("tether.tools."))
tool = registry.get("read_file")
after = sorted(m for m in sys.modules if m.startswith("tether.tools."))
print(msgspec.json.encode([before, after, tool.name, msgspec.json.encode(tool.spec).decode()]).decode())
sys.stdout.flush()
sys.stdout.buffer.write(specs)
"""


@pytest.mark.slow
def test_a_start_loads_a_tool_when_a_call_names_it(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", DEFERRED, str(tmp_path)]
    subprocess.run(command, env=env, check=True, capture_output=True)  # keeps the specs
    out = subprocess.run(command, env=env, check=True, capture_output=True).stdout
    line, specs = out.split(b"\n", 1)
    before, after, name, spec = json.loads(line)
    assert before == ["tether.tools.tool_specs"]
    assert "tether.tools.files" in after and "tether.tools.run" not in after
    read_file = next(t for t in catalog() if t.name == "read_file")
    assert name == "read_file" and spec.encode() == msgspec.json.encode(read_file.spec)
    assert specs == msgspec.json.encode([t.spec for t in catalog()])
