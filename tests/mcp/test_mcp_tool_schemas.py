"""Tools built from someone else's JSON schema (an MCP server's): the schema a provider gets is
valid and self-contained, the arguments are checked against it before anyone is asked, and
the names fit every provider. The schemas come from a real server built with the MCP SDK,
plus the shapes other servers write by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import validators

from tests.support.toolctx import make_ctx
from tests.tools.test_tool_schemas import _refs, _resolves
from tether.engine.mcp.names import MAX_LENGTH, tool_name, unique
from tether.engine.registry import Registry, ToolDef, ToolOutput, schema_tool
from tether.engine.seam import Capabilities
from tether.errors import ToolError

pytestmark = pytest.mark.anyio

HAND_WRITTEN: dict[str, dict[str, Any]] = {
    "tree (recursive)": {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["name"],
            }
        },
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"],
    },
    "draft-07 definitions": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "properties": {"at": {"$ref": "#/definitions/Point", "description": "Where."}},
    },
    "remote and missing references": {
        "type": "object",
        "properties": {
            "far": {"$ref": "https://example.com/schemas/thing.json"},
            "gone": {"$ref": "#/$defs/Missing", "description": "Nothing there."},
        },
    },
    "no properties at all": {"type": "object"},
    "no type": {"properties": {"q": {"type": "string"}}, "required": ["q"]},
}


def _ctx(tmp_path: Path) -> Capabilities:
    return make_ctx(tmp_path, tmp_path / "spill")


def _sample(schema: dict[str, Any], prop: dict[str, Any]) -> Any:
    """A value of `prop`'s type (following local references into `schema`)."""
    if "$ref" in prop:
        target: Any = schema
        for part in prop["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return _sample(schema, target)
    kind = prop.get("type")
    if kind == "array":
        return [_sample(schema, prop["items"])] if "items" in prop else []
    if kind == "object":
        props = prop.get("properties", {})
        return {k: _sample(schema, props[k]) for k in prop.get("required", [])}
    samples: dict[str, Any] = {"string": "x", "integer": 1, "number": 1.0, "boolean": True}
    return samples.get(str(kind), "x")


async def _noop(ctx: Capabilities, args: dict[str, Any]) -> ToolOutput | str:
    return "ok"


async def _sdk_schemas() -> dict[str, dict[str, Any]]:
    from mcp import Client

    from tests.support.mcp_servers.tools import build

    async with Client(build("echo")) as client:
        listed = await client.list_tools()
    return {t.name: t.input_schema for t in listed.tools}


async def test_every_generated_schema_is_valid_and_self_contained() -> None:
    schemas = {**await _sdk_schemas(), **HAND_WRITTEN}
    assert "$defs" in schemas["file_items"]  # the SDK's nested model: a reference to inline
    for label, schema in schemas.items():
        t = schema_tool(tool_name("echo", label), "A tool.", schema, _noop)
        params = t.parameters
        validators.validator_for(params).check_schema(params)
        assert params["type"] == "object" and isinstance(params["properties"], dict), label
        dangling = [r for r in _refs(params) if not _resolves(params, r)]
        assert dangling == [], f"{label}: unresolvable references {dangling}"
        sample = _sample(params, params)
        assert t.decode(msgspec.json.encode(sample)) == sample  # the checker accepts it too


async def test_local_references_are_inlined_and_a_recursive_one_is_kept() -> None:
    sdk = await _sdk_schemas()
    items = schema_tool("t", "", sdk["file_items"], _noop).parameters
    assert "$defs" not in items and list(_refs(items)) == []
    assert items["properties"]["items"]["items"]["required"] == ["title"]
    tree = schema_tool("t", "", HAND_WRITTEN["tree (recursive)"], _noop).parameters
    assert tree["properties"]["root"] == {"$ref": "#/$defs/Node"} and "Node" in tree["$defs"]
    point = schema_tool("t", "", HAND_WRITTEN["draft-07 definitions"], _noop).parameters
    assert point["properties"]["at"] == {
        "type": "object",
        "properties": {"x": {"type": "number"}},
        "description": "Where.",
    }
    refs = schema_tool("t", "", HAND_WRITTEN["remote and missing references"], _noop).parameters
    assert refs["properties"] == {"far": {}, "gone": {"description": "Nothing there."}}


def test_a_schema_no_provider_would_take_is_refused() -> None:
    with pytest.raises(ValueError, match="not 'object'"):
        schema_tool("t", "", {"type": "string"}, _noop)
    with pytest.raises(ValueError, match="not a valid JSON schema"):
        schema_tool("t", "", {"type": "object", "properties": {"a": {"type": 5}}}, _noop)


def test_arguments_are_checked_against_the_schema_in_the_models_words() -> None:
    t = schema_tool(
        "t",
        "",
        {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"n": {"type": "integer"}}},
                },
            },
            "required": ["text"],
        },
        _noop,
    )
    cases = {
        "{}": "missing required argument `text`",
        '{"text": 3}': "`text`: 3 is not of type 'string'",
        '{"text": "a", "items": [{"n": "x"}]}': "`items.0.n`: 'x' is not of type 'integer'",
        "[1]": "arguments must be a JSON object",
        "{nope": "arguments are not valid JSON",
    }
    for arguments, message in cases.items():
        with pytest.raises(ToolError) as caught:
            t.decode(arguments)
        assert caught.value.code == "INVALID_ARGS" and message in caught.value.message
    assert t.decode('{"text": "a"}') == {"text": "a"}


async def test_a_schema_tool_is_called_with_its_arguments_as_one_object(tmp_path: Path) -> None:
    got: list[dict[str, Any]] = []

    async def call(ctx: Capabilities, args: dict[str, Any]) -> str:
        got.append(args)
        return "done"

    t = schema_tool("t", "", {"type": "object"}, call, title="MCP s: t", read_only=True)
    out = await t.invoke(_ctx(tmp_path), t.decode('{"a": [1]}'))
    assert got == [{"a": [1]}] and out.text == "done"
    card = t.describe(_ctx(tmp_path), None)
    assert (t.kind, t.read_only, card.title, card.kind) == ("read", True, "MCP s: t", "read")
    assert schema_tool("u", "", {"type": "object"}, call).kind == "other"


def test_names_fit_every_provider_and_stay_unique() -> None:
    assert tool_name("echo", "echo") == "mcp__echo__echo"
    assert tool_name("My Server!", "do.it/now") == "mcp__My_Server___do_it_now"
    long_a, long_b = tool_name("s", "a" * 80), tool_name("s", "a" * 79 + "b")
    assert len(long_a) == len(long_b) == MAX_LENGTH and long_a != long_b
    taken = {"mcp__echo__echo"}
    assert unique("mcp__echo__echo", taken) == "mcp__echo__echo_2"
    full = {long_a}
    assert len(unique(long_a, full)) == MAX_LENGTH and unique(long_a, full) not in full
    for name in (tool_name("ü ß", "∑"), long_a, unique(long_a, full)):
        assert msgspec.json.decode(msgspec.json.encode(name)) == name
        assert all(c.isascii() and (c.isalnum() or c in "_-") for c in name)


def test_a_registry_offers_its_sources_tools_as_they_come_and_go() -> None:
    live: list[ToolDef] = []
    fixed = schema_tool("read_file", "built in", {"type": "object"}, _noop)
    registry = Registry([fixed])
    registry.include(lambda: live)
    assert [s.name for s in registry.specs()] == ["read_file"]
    live.append(schema_tool("mcp__s__t", "remote", {"type": "object"}, _noop))
    live.append(schema_tool("read_file", "a clash", {"type": "object"}, _noop))
    assert [s.name for s in registry.specs()] == ["read_file", "mcp__s__t"]
    assert registry.get("read_file") is fixed and registry.get("mcp__s__t") is live[0]
    live.clear()
    assert registry.get("mcp__s__t") is None and len(registry.specs()) == 1


def test_schemas_are_fitted_to_what_every_provider_takes() -> None:
    from tether.engine.schema_fit import fit

    schema = {
        "type": "object",
        "anyOf": [
            {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
            {"type": "object", "properties": {"id": {"type": "integer"}, "n": {"type": "array"}},
             "required": ["id", "n"]},
        ],
        "properties": {"Account Number": {"type": "string"},
                       "rows": {"type": "array", "items": {"type": "object",
                                "properties": {"a b": {"type": "string"}}}}},
        "required": ["Account Number"],
    }  # fmt: skip
    sent, back = fit(schema)
    assert "anyOf" not in sent and sent["required"] == ["Account_Number", "id"]
    assert sent["properties"]["n"] == {"type": "array", "items": {}}
    assert set(sent["properties"]) == {"Account_Number", "rows", "id", "n"}
    assert back is not None
    assert back({"Account_Number": "1", "rows": [{"a_b": "x"}], "id": 2}) == {
        "Account Number": "1",
        "rows": [{"a b": "x"}],
        "id": 2,
    }
    assert fit({"type": "object", "properties": {"ok": {"type": "string"}}})[1] is None


def test_a_schema_that_explodes_when_inlined_is_refused_in_bounded_work() -> None:
    from tether.engine.json_schema import SchemaTooLarge, self_contained

    defs = {
        f"d{i}": {"type": "object", "properties": {"l": {"$ref": f"#/$defs/d{i + 1}"},
                                                      "r": {"$ref": f"#/$defs/d{i + 1}"}}}
        for i in range(40)
    }  # fmt: skip
    defs["d40"] = {"type": "string"}
    with pytest.raises(SchemaTooLarge):
        self_contained(
            {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}
        )


def test_every_position_holding_a_schema_is_fitted_and_values_are_left_alone() -> None:
    """Keys renamed anywhere (a union's branch, a map's values, a tuple's positions) come back
    renamed; `default` and `enum` are values, not schemas: nothing in them changes."""
    from tether.engine.schema_fit import fit

    odd = {"type": "object", "properties": {"a b": {"type": "string"}}, "required": ["a b"]}
    value = {"type": "array", "properties": {"c d": 1}}
    schema = {
        "type": "object",
        "properties": {
            "u": {"anyOf": [odd, {"type": "null"}]},
            "m": {"type": "object", "additionalProperties": odd},
            "t": {"type": "array", "prefixItems": [odd], "items": {"type": ["array", "null"]}},
            "v": {"type": "object", "default": value, "enum": [value]},
        },
    }
    sent, back = fit(schema)
    props = sent["properties"]
    assert props["u"]["anyOf"][0]["required"] == ["a_b"]
    assert props["t"]["items"] == {"type": ["array", "null"], "items": {}}
    assert props["v"] == schema["properties"]["v"]
    assert back is not None
    assert back({"u": {"a_b": "1"}, "m": {"k": {"a_b": "2"}}, "t": [{"a_b": "3"}, []]}) == {
        "u": {"a b": "1"},
        "m": {"k": {"a b": "2"}},
        "t": [{"a b": "3"}, []],
    }


def test_older_drafts_are_sent_as_draft_2020_12_and_checked_as_they_were() -> None:
    """Anthropic takes draft 2020-12 only; the arguments are still checked against the draft
    the server wrote (its tuple closed after two numbers, its exclusive bound), or implied: a
    tuple `items` with no `$schema` is read as draft-07, not refused as 2020-12."""
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "xy": {"type": "array", "items": [{"type": "number"}] * 2, "additionalItems": False},
            "n": {"type": "integer", "minimum": 0, "exclusiveMaximum": 9},
        },
    }
    draft4 = {**draft7, "$schema": "http://json-schema.org/draft-04/schema#"}
    draft4["properties"] = {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}}
    implied = {k: v for k, v in draft7.items() if k != "$schema"}  # before MCP named a default
    t7, t4 = schema_tool("t", "", draft7, _noop), schema_tool("u", "", draft4, _noop)
    t7i = schema_tool("v", "", implied, _noop)
    assert t7i.parameters == t7.parameters
    with pytest.raises(ToolError, match="Additional items are not allowed"):
        t7i.decode('{"xy": [1, 2, 3]}')
    for t in (t7, t4):
        validators.Draft202012Validator.check_schema(t.parameters)
        assert "$schema" not in t.parameters
    assert t7.parameters["properties"]["xy"] == {
        "type": "array", "prefixItems": [{"type": "number"}] * 2, "items": {}, "maxItems": 2,
    }  # fmt: skip
    assert t4.parameters["properties"]["n"] == {"type": "integer", "exclusiveMinimum": 0}
    with pytest.raises(ToolError, match="Additional items are not allowed"):
        t7.decode('{"xy": [1, 2, 3]}')
    with pytest.raises(ToolError, match="less than or equal to the minimum of 0"):
        t4.decode('{"n": 0}')


def test_a_schema_still_no_draft_2020_12_when_reshaped_is_refused() -> None:
    draft3 = {
        "$schema": "http://json-schema.org/draft-03/schema#",
        "type": "object",
        "properties": {"q": {"type": "string", "required": True}},
    }
    with pytest.raises(ValueError, match="no valid JSON Schema draft 2020-12"):
        schema_tool("t", "", draft3, _noop)
