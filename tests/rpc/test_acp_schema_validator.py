"""The ACP schema checker (tests/support/acp_schema.py) accepts good frames and explains bad ones."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.support import acp_schema
from tests.support.acp_schema import (
    literal_schema_accepts,
    method_defs,
    validate_agent_frame,
    validate_agent_response,
    validate_client_frame,
    validate_client_response,
)

Frame = dict[str, Any]
SID = "sess_1"
README = "/home/user/project/README.md"


def notify(update: dict[str, Any]) -> Frame:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": SID, "update": update},
    }


def result(rid: int | str | None, body: Any) -> Frame:
    return {"jsonrpc": "2.0", "id": rid, "result": body}


INITIALIZE_RESULT = {
    "protocolVersion": 1,
    "agentCapabilities": {
        "loadSession": True,
        "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
        "mcpCapabilities": {"http": True, "sse": False},
        "sessionCapabilities": {"list": {}, "close": {}},
        "_meta": {"tether": {"anything": [1, 2]}},
    },
    "authMethods": [],
    "agentInfo": {"name": "tether", "title": "tether", "version": "0.1.0"},
}
TOOL_CALL_WITH_DIFF = {
    "sessionUpdate": "tool_call",
    "toolCallId": "call_1",
    "title": "Edit README.md",
    "kind": "edit",
    "status": "pending",
    "content": [{"type": "diff", "path": README, "oldText": "# Old\n", "newText": "# New\n"}],
    "locations": [{"path": README, "line": 1}],
    "rawInput": {"path": README, "free_form_keys": "are fine here"},
}
PERMISSION_REQUEST = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "session/request_permission",
    "params": {
        "sessionId": SID,
        "toolCall": {"toolCallId": "call_1", "title": "Edit README.md", "kind": "edit"},
        "options": [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ],
    },
}

GOOD_AGENT_FRAMES: dict[str, Frame] = {
    "initialize response": result(0, INITIALIZE_RESULT),
    "agent_message_chunk": notify(
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Hello"},
            "messageId": "m1",
        }
    ),
    "tool_call with diff": notify(TOOL_CALL_WITH_DIFF),
    "tool_call_update completed": notify(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_1",
            "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "done"}}],
        }
    ),
    "tool_call_update new file diff": notify(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_2",
            "content": [{"type": "diff", "path": "/p/new.txt", "oldText": None, "newText": "x"}],
        }
    ),
    "plan": notify(
        {
            "sessionUpdate": "plan",
            "entries": [{"content": "Read", "priority": "high", "status": "in_progress"}],
        }
    ),
    "usage_update": notify({"sessionUpdate": "usage_update", "used": 1200, "size": 128000}),
    "available_commands_update": notify(
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [{"name": "mode", "description": "Switch mode", "input": None}],
        }
    ),
    "session_info_update": notify({"sessionUpdate": "session_info_update", "title": "Fix it"}),
    "session/request_permission request": PERMISSION_REQUEST,
    "fs/read_text_file request": {
        "jsonrpc": "2.0",
        "id": 8,
        "method": "fs/read_text_file",
        "params": {"sessionId": SID, "path": README, "line": 1, "limit": 20},
    },
    "error response with id null": {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    },
    "error response with data": {
        "jsonrpc": "2.0",
        "id": "abc",
        "error": {"code": -32602, "message": "Invalid params", "data": {"field": "cwd"}},
    },
    "prompt response": result(3, {"stopReason": "end_turn"}),
    "$/cancel_request": {
        "jsonrpc": "2.0",
        "method": "$/cancel_request",
        "params": {"requestId": 7},
    },
    "extension notification": {"jsonrpc": "2.0", "method": "_tether/status", "params": {"x": 1}},
}


@pytest.mark.parametrize("frame", GOOD_AGENT_FRAMES.values(), ids=GOOD_AGENT_FRAMES.keys())
def test_accepts_good_agent_frames(frame: Frame) -> None:
    validate_agent_frame(frame)
    assert literal_schema_accepts("agent", frame)  # the schema read literally agrees


GOOD_RESPONSES: list[tuple[str, Any]] = [
    ("initialize", INITIALIZE_RESULT),
    ("session/new", {"sessionId": SID}),
    ("session/prompt", {"stopReason": "cancelled"}),
    ("session/list", {"sessions": [{"sessionId": SID, "cwd": "/p", "title": None}]}),
    ("session/close", {}),
    ("authenticate", {}),
]


@pytest.mark.parametrize(("method", "body"), GOOD_RESPONSES, ids=[m for m, _ in GOOD_RESPONSES])
def test_accepts_good_responses_for_their_method(method: str, body: Any) -> None:
    validate_agent_response(method, result(1, body))
    validate_agent_frame(result(1, body), method=method)


def test_method_maps_come_from_the_schema() -> None:
    agent = method_defs("agent")
    assert agent.responses["initialize"] == "InitializeResponse"
    assert agent.responses["session/new"] == "NewSessionResponse"
    assert agent.responses["session/prompt"] == "PromptResponse"
    assert agent.responses["session/list"] == "ListSessionsResponse"
    assert agent.responses["session/close"] == "CloseSessionResponse"
    assert agent.requests["session/request_permission"] == "RequestPermissionRequest"
    assert agent.requests["fs/write_text_file"] == "WriteTextFileRequest"
    assert agent.notifications["session/update"] == "SessionNotification"
    assert agent.notifications["$/cancel_request"] == "CancelRequestNotification"
    assert "session/cancel" not in agent.notifications  # that one only the client sends
    client = method_defs("client")
    assert client.requests["session/prompt"] == "PromptRequest"
    assert client.notifications["session/cancel"] == "CancelNotification"
    assert client.responses["session/request_permission"] == "RequestPermissionResponse"
    # the two sides answer disjoint sets of methods
    assert not set(agent.responses) & set(client.responses)


def _tool_call_update(**fields: Any) -> Frame:
    return notify({"sessionUpdate": "tool_call_update", "toolCallId": "call_1", **fields})


def _without(frame: Frame, *path: str) -> Frame:
    out = copy.deepcopy(frame)
    node = out
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return out


# (frame, the path reported, a fragment of the message)
BAD_AGENT_FRAMES: dict[str, tuple[Any, str, str]] = {
    "snake_case sessionId": (
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "session_id": SID,
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "x"},
                },
            },
        },
        "at $.params:",
        "'sessionId' is a required property",
    ),
    "snake_case optional field": (
        _tool_call_update(raw_input={"path": README}),
        "at $.params.update:",
        "unknown property 'raw_input'",
    ),
    "snake_case diff field": (
        notify(
            {**TOOL_CALL_WITH_DIFF, "content": [{"type": "diff", "path": README, "new_text": "x"}]}
        ),
        "at $.params.update.content[0]:",
        "'newText' is a required property",
    ),
    "missing title on tool_call": (
        _without(notify(TOOL_CALL_WITH_DIFF), "params", "update", "title"),
        "at $.params.update:",
        "'title' is a required property",
    ),
    "missing content on a chunk": (
        notify({"sessionUpdate": "agent_message_chunk"}),
        "at $.params.update:",
        "'content' is a required property",
    ),
    "unknown sessionUpdate tag": (
        notify({"sessionUpdate": "agent_message", "content": {"type": "text", "text": "x"}}),
        "at $.params.update.sessionUpdate:",
        "'agent_message' is not one of ['user_message_chunk', 'agent_message_chunk'",
    ),
    "bad tool_call_update status": (
        _tool_call_update(status="done"),
        "at $.params.update.status:",
        "'done' is not one of ['pending', 'in_progress', 'completed', 'failed']",
    ),
    "bad tool kind": (
        notify({**TOOL_CALL_WITH_DIFF, "kind": "write"}),
        "at $.params.update.kind:",
        "'write' is not one of ['read', 'edit'",
    ),
    "unknown content block type": (
        notify(
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "markdown", "text": "x"}}
        ),
        "at $.params.update.content.type:",
        "'markdown' is not one of ['text', 'image'",
    ),
    "text block without text": (
        notify({"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}),
        "at $.params.update.content:",
        "'text' is a required property",
    ),
    "bad permission option kind": (
        {
            **PERMISSION_REQUEST,
            "params": {
                **PERMISSION_REQUEST["params"],
                "options": [{"optionId": "a", "name": "Allow", "kind": "allow"}],
            },
        },
        "at $.params.options[0].kind:",
        "'allow' is not one of ['allow_once', 'allow_always', 'reject_once', 'reject_always']",
    ),
    "a method only the client sends": (
        {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {}},
        "at $.method:",
        "'session/prompt' is not a request the agent sends",
    ),
    "unknown notification": (
        {"jsonrpc": "2.0", "method": "session/updates", "params": {}},
        "at $.method:",
        "'session/updates' is not a notification the agent sends",
    ),
    "missing jsonrpc": (
        {
            k: v
            for k, v in notify({"sessionUpdate": "plan", "entries": []}).items()
            if k != "jsonrpc"
        },
        "at $:",
        "'jsonrpc' is a required property",
    ),
    "wrong jsonrpc version": (
        {**result(1, {}), "jsonrpc": "1.0"},
        "at $.jsonrpc:",
        "'2.0' was expected",
    ),
    "result and error together": (
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
        "at $:",
        "both 'result' and 'error'",
    ),
    "extra envelope member": (
        {**result(1, {}), "session": SID},
        "at $:",
        "unknown JSON-RPC member(s) ['session']",
    ),
    "string error code": (
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "-32601", "message": "nope"}},
        "at $.error.code:",
        "is not of type 'integer'",
    ),
    "fractional id": (
        {"jsonrpc": "2.0", "id": 1.5, "error": {"code": -32603, "message": "x"}},
        "at $.id:",
        "is not valid under any of the given schemas",
    ),
    "custom field on an error": (
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x", "trace": "..."}},
        "at $.error:",
        "unknown property 'trace'",
    ),
    "snake_case result": (
        result(1, {"stop_reason": "end_turn"}),
        "at $.result:",
        "unknown property 'stop_reason'",
    ),
    "protocolVersion beyond uint16": (
        result(0, {**INITIALIZE_RESULT, "protocolVersion": 70000}),
        "at $.result.protocolVersion:",
        "70000 is not a 'uint16'",
    ),
    "negative usage": (
        notify({"sessionUpdate": "usage_update", "used": -1, "size": 10}),
        "at $.params.update.used:",
        "-1 is not a 'uint64'",
    ),
    "a batch": ([result(1, {})], "at $:", "a frame is a JSON object, not list"),
}


@pytest.mark.parametrize(
    ("frame", "where", "what"), BAD_AGENT_FRAMES.values(), ids=BAD_AGENT_FRAMES.keys()
)
def test_rejects_bad_agent_frames_readably(frame: Any, where: str, what: str) -> None:
    with pytest.raises(AssertionError) as info:
        validate_agent_frame(frame)
    message = str(info.value)
    assert where in message.splitlines()[0], message
    assert what in message, message
    assert f"frame: {json.dumps(frame)}" in message  # the whole frame, for the record


BAD_RESPONSES: dict[str, tuple[str, Frame, str]] = {
    "prompt without stopReason": (
        "session/prompt",
        result(2, {}),
        "at $.result: 'stopReason' is a required property [in PromptResponse]",
    ),
    "unknown stop reason": (
        "session/prompt",
        result(2, {"stopReason": "done"}),
        "at $.result.stopReason: 'done' is not one of ['end_turn'",
    ),
    "session/new without sessionId": (
        "session/new",
        result(1, {"session_id": SID}),
        "at $.result: 'sessionId' is a required property [in NewSessionResponse]",
    ),
    "initialize as a bare string": (
        "initialize",
        result(0, "ok"),
        "at $.result: 'ok' is not of type 'object'",
    ),
    "an error where a result is expected": (
        "session/prompt",
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "boom"}},
        "expected a result, got an error",
    ),
    "a null result for session/close": (
        "session/close",
        result(4, None),
        "at $.result: None is not of type 'object'",
    ),
}


@pytest.mark.parametrize(
    ("method", "frame", "what"), BAD_RESPONSES.values(), ids=BAD_RESPONSES.keys()
)
def test_rejects_bad_responses_for_their_method(method: str, frame: Frame, what: str) -> None:
    with pytest.raises(AssertionError, match="frame: ") as info:
        validate_agent_response(method, frame)
    assert what in str(info.value), str(info.value)


def test_response_to_a_method_the_agent_never_answers_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="answers no request 'session/update'"):
        validate_agent_response("session/update", result(1, {}))
    validate_agent_response("_tether/anything", result(1, {"free": "form"}))


def test_non_strict_mode_allows_undeclared_keys_but_not_missing_ones() -> None:
    frame = _tool_call_update(raw_input={"a": 1})
    validate_agent_frame(frame, strict=False)
    with pytest.raises(AssertionError, match="'toolCallId' is a required property"):
        validate_agent_frame(_without(frame, "params", "update", "toolCallId"), strict=False)


def test_meta_and_free_form_values_stay_open() -> None:
    frame = notify(
        {
            **TOOL_CALL_WITH_DIFF,
            "rawInput": {"any": {"nested": ["thing"]}},
            "rawOutput": {"exit_code": 0},
            "_meta": {"vendor.example/x": {"y": 1}},
        }
    )
    validate_agent_frame(frame)


def test_expected_method_is_enforced_on_requests() -> None:
    validate_agent_frame(PERMISSION_REQUEST, method="session/request_permission")
    with pytest.raises(AssertionError, match="expected method 'fs/read_text_file'"):
        validate_agent_frame(PERMISSION_REQUEST, method="fs/read_text_file")


GOOD_CLIENT_FRAMES: dict[str, Frame] = {
    "initialize": {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}},
            "clientInfo": {"name": "test", "version": "1"},
        },
    },
    "session/new": {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/new",
        "params": {"cwd": "/p", "mcpServers": []},
    },
    "session/prompt": {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "session/prompt",
        "params": {"sessionId": SID, "prompt": [{"type": "text", "text": "hi"}]},
    },
    "session/cancel": {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": SID}},
    "permission answer": result(7, {"outcome": {"outcome": "selected", "optionId": "allow"}}),
    "permission cancelled": result(7, {"outcome": {"outcome": "cancelled"}}),
    "fs write answer": result(9, {}),
}


@pytest.mark.parametrize("frame", GOOD_CLIENT_FRAMES.values(), ids=GOOD_CLIENT_FRAMES.keys())
def test_accepts_good_client_frames(frame: Frame) -> None:
    validate_client_frame(frame)
    assert literal_schema_accepts("client", frame)


def test_client_responses_and_direction() -> None:
    answer = result(7, {"outcome": {"outcome": "selected", "optionId": "allow"}})
    validate_client_response("session/request_permission", answer)
    with pytest.raises(AssertionError, match=r"\$\.result\.outcome: 'optionId' is a required"):
        validate_client_response(
            "session/request_permission", result(7, {"outcome": {"outcome": "selected"}})
        )
    with pytest.raises(
        AssertionError, match="'session/update' is not a notification the client sends"
    ):
        validate_client_frame(GOOD_AGENT_FRAMES["agent_message_chunk"])
    with pytest.raises(AssertionError, match="'initialize' is not a request the agent sends"):
        validate_agent_frame(GOOD_CLIENT_FRAMES["initialize"])
    with pytest.raises(AssertionError, match=r"\$\.params: 'prompt' is a required property"):
        validate_client_frame(_without(GOOD_CLIENT_FRAMES["session/prompt"], "params", "prompt"))


def _values(node: Any) -> Iterator[Any]:
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from _values(value)
    elif isinstance(node, list):
        for value in node:
            yield from _values(value)


@pytest.mark.slow
def test_prepared_schema_accepts_exactly_what_the_raw_schema_accepts() -> None:
    """The rewrites (inlined refs, enums, tag dispatch) change speed and messages, not
    meaning: compare every $defs type, prepared vs raw, on every value of the samples."""
    raw = acp_schema._raw_schema()
    checker = acp_schema._checker()
    formats = acp_schema._format_checker()
    samples: list[Any] = [
        *GOOD_AGENT_FRAMES.values(),
        *GOOD_CLIENT_FRAMES.values(),
        *(frame for frame, _, _ in BAD_AGENT_FRAMES.values()),
        *(frame for _, frame, _ in BAD_RESPONSES.values()),
    ]
    pool: dict[str, Any] = {}
    for sample in samples:
        for value in _values(sample):
            if isinstance(value, dict | list):
                pool.setdefault(json.dumps(value, sort_keys=True), value)
    compared = 0
    for name, body in raw["$defs"].items():
        if body.get("type") in ("string", "integer", "number", "boolean"):
            continue  # scalars: the pool holds only objects and arrays
        plain = Draft202012Validator(
            {"$defs": raw["$defs"], "$ref": f"#/$defs/{name}"}, format_checker=formats
        )
        prepared = checker.validator(checker.defs[name])
        for value in pool.values():
            assert plain.is_valid(value) == prepared.is_valid(value), (name, value)
            compared += 1
    assert compared > 5_000


def test_thousands_of_frames_validate_quickly() -> None:
    frames = [
        notify(
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": f"chunk {i} "},
                "messageId": "m1",
            }
        )
        for i in range(2000)
    ] + [notify(TOOL_CALL_WITH_DIFF)] * 500
    started = time.perf_counter()
    for frame in frames:
        validate_agent_frame(frame)
    elapsed = time.perf_counter() - started
    assert elapsed < 10, f"{len(frames)} frames took {elapsed:.1f}s"  # ~0.5 s here
