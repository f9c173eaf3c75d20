"""Every tool of the catalog offers a schema a strict provider accepts: a valid, self-contained
draft 2020-12 object schema. OpenAI, Anthropic and DeepSeek reject the whole request for one
dangling `$ref`, so a tool added later is checked here without anyone remembering to."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from tether.engine.registry import ToolArgs, ToolDef, tool
from tether.engine.seam import Capabilities
from tether.tools import catalog

TOOLS = catalog()


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _resolves(schema: dict[str, Any], ref: str) -> bool:
    if not ref.startswith("#"):
        return False  # a remote reference: no provider fetches it
    node: Any = schema
    for part in [p for p in ref[1:].split("/") if p]:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


@pytest.mark.parametrize("t", TOOLS, ids=[t.name for t in TOOLS])
def test_parameters_are_a_self_contained_valid_schema(t: ToolDef) -> None:
    params = t.parameters
    Draft202012Validator.check_schema(params)
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert set(params["required"]) <= set(params["properties"])
    dangling = [r for r in _refs(params) if not _resolves(params, r)]
    assert dangling == [], f"{t.name}: unresolvable references {dangling}"
    for name, prop in params["properties"].items():
        assert prop.get("description"), f"{t.name}.{name} has no description for the model"


@pytest.mark.parametrize("t", TOOLS, ids=[t.name for t in TOOLS])
def test_the_schema_accepts_what_the_tool_decodes(t: ToolDef) -> None:
    """The schema and the decoder agree on the required arguments: an object with only the
    required arguments, filled from the schema's own types, passes both."""
    validator = Draft202012Validator(t.parameters)
    sample = {name: _sample(t.parameters["properties"][name]) for name in t.parameters["required"]}
    validator.validate(sample)
    t.decode(msgspec.json.encode(sample))


def _sample(prop: dict[str, Any]) -> Any:
    kind = prop.get("type")
    if "enum" in prop:
        return prop["enum"][0]
    if kind == "array":
        return [_sample(prop["items"])] if "items" in prop else []
    if kind == "object":
        return {k: _sample(prop["properties"][k]) for k in prop.get("required", [])}
    samples: dict[str, Any] = {"string": "x", "integer": 1, "number": 1.0, "boolean": True}
    return samples.get(str(kind), "x")


class _Item(msgspec.Struct, forbid_unknown_fields=True):
    title: str
    tags: list[str] = []


class NestedArgs(ToolArgs):
    items: list[_Item]
    title: str = ""


def test_nested_definitions_are_inlined_and_a_property_may_be_called_title() -> None:
    @tool()
    async def nested(ctx: Capabilities, args: NestedArgs) -> str:
        """A tool with nested argument types.

        Args:
            items: Things.
            title: A heading.
        """
        return ""

    params = nested.parameters
    assert "$defs" not in params and list(_refs(params)) == []
    item = params["properties"]["items"]["items"]
    assert item["properties"]["title"] == {"type": "string"}
    assert item["additionalProperties"] is False
    assert "title" in params["properties"]
