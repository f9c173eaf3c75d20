"""Recorded-shape streams for the three APIs, as the mock server's chunk lists.

The payloads mirror what the real services send (ids, `object`, `sequence_number`, pings and
other fields the adapters must skip), trimmed to one line each.
"""

from __future__ import annotations

import json
from typing import Any

from .mock_llm_server import DONE, sse

Chunks = list[bytes | float]

# --- OpenAI chat completions ------------------------------------------------------------------

CHAT_USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 100},
    "completion_tokens_details": {"reasoning_tokens": 12},
}


def chat_chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
) -> bytes:
    choices = (
        []
        if delta is None
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    )
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "test-model",
        "system_fingerprint": "fp_1",
        "choices": choices,
    }
    if usage is not None:
        body["usage"] = usage
    return sse(body)


def chat_prefix(texts: list[str], reasoning: list[str] | None = None) -> Chunks:
    chunks: Chunks = [chat_chunk({"role": "assistant", "content": ""})]
    chunks += [chat_chunk({"reasoning_content": r, "content": None}) for r in reasoning or []]
    chunks += [chat_chunk({"content": t}) for t in texts]
    return chunks


def chat_end(finish: str = "stop", usage: dict[str, Any] | None = CHAT_USAGE) -> Chunks:
    chunks: Chunks = [chat_chunk({}, finish=finish)]
    if usage is not None:
        chunks.append(chat_chunk(None, usage=usage))
    return [*chunks, DONE]


def chat_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> Chunks:
    """One streamed tool call (arguments in one piece), then `finish_reason: tool_calls`."""
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return [chat_chunk({"role": "assistant", "tool_calls": [call]}), *chat_end("tool_calls")]


def chat_text(texts: list[str], reasoning: list[str] | None = None) -> Chunks:
    return chat_prefix(texts, reasoning) + chat_end()


# --- OpenAI Responses -------------------------------------------------------------------------

RESPONSES_USAGE = {
    "input_tokens": 200,
    "input_tokens_details": {"cached_tokens": 64},
    "output_tokens": 40,
    "output_tokens_details": {"reasoning_tokens": 16},
    "total_tokens": 240,
}


class ResponsesScript:
    """Builds a Responses event stream with running sequence numbers."""

    def __init__(self) -> None:
        self.seq = 0
        self.chunks: Chunks = []

    def event(self, kind: str, **fields: Any) -> ResponsesScript:
        self.chunks.append(sse({"type": kind, "sequence_number": self.seq, **fields}, event=kind))
        self.seq += 1
        return self

    def created(self) -> ResponsesScript:
        response = {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}
        return self.event("response.created", response=response)

    def reasoning(self, index: int, parts: list[str], encrypted: str = "enc-1") -> ResponsesScript:
        item = {"id": f"rs_{index}", "type": "reasoning", "summary": []}
        self.event("response.output_item.added", output_index=index, item=item)
        self.event(
            "response.reasoning_summary_part.added",
            item_id=item["id"],
            output_index=index,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        )
        for p in parts:
            self.event(
                "response.reasoning_summary_text.delta",
                item_id=item["id"],
                output_index=index,
                summary_index=0,
                delta=p,
            )
        done = {**item, "summary": [{"type": "summary_text", "text": "".join(parts)}]}
        done["encrypted_content"] = encrypted
        return self.event("response.output_item.done", output_index=index, item=done)

    def text_deltas(self, index: int, texts: list[str]) -> ResponsesScript:
        item = {"id": f"msg_{index}", "type": "message", "role": "assistant", "content": []}
        self.event("response.output_item.added", output_index=index, item=item)
        for t in texts:
            self.event(
                "response.output_text.delta",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                delta=t,
                logprobs=[],
            )
        return self

    def text_done(self, index: int, texts: list[str]) -> ResponsesScript:
        content = [{"type": "output_text", "text": "".join(texts), "annotations": []}]
        item = {"id": f"msg_{index}", "type": "message", "role": "assistant", "content": content}
        return self.event("response.output_item.done", output_index=index, item=item)

    def call(self, index: int, call_id: str, name: str, pieces: list[str]) -> ResponsesScript:
        item = {"id": f"fc_{index}", "type": "function_call", "call_id": call_id, "name": name}
        self.event("response.output_item.added", output_index=index, item={**item, "arguments": ""})
        for p in pieces:
            self.event(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=p,
            )
        done = {**item, "arguments": "".join(pieces), "status": "completed"}
        return self.event("response.output_item.done", output_index=index, item=done)

    def completed(
        self, status: str = "completed", incomplete: str | None = None, done: bool = False
    ) -> Chunks:
        kind = "response.completed" if status == "completed" else "response.incomplete"
        response: dict[str, Any] = {"id": "resp_1", "status": status, "usage": RESPONSES_USAGE}
        if incomplete:
            response["incomplete_details"] = {"reason": incomplete}
        self.event(kind, response=response)
        return [*self.chunks, DONE] if done else self.chunks


def responses_prefix(texts: list[str]) -> Chunks:
    return ResponsesScript().created().text_deltas(0, texts).chunks


def responses_text(texts: list[str]) -> Chunks:
    return ResponsesScript().created().text_deltas(0, texts).text_done(0, texts).completed()


# --- Anthropic Messages -----------------------------------------------------------------------


def anthropic_event(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, event=kind)


def anthropic_start(input_tokens: int = 50, cache_read: int = 20) -> bytes:
    usage = {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": cache_read,
        "output_tokens": 1,
    }
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-test",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return anthropic_event("message_start", message=message)


def anthropic_block(index: int, block: dict[str, Any], deltas: list[dict[str, Any]]) -> Chunks:
    chunks: Chunks = [anthropic_event("content_block_start", index=index, content_block=block)]
    chunks += [anthropic_event("content_block_delta", index=index, delta=d) for d in deltas]
    chunks.append(anthropic_event("content_block_stop", index=index))
    return chunks


def anthropic_text_block(index: int, texts: list[str]) -> Chunks:
    deltas = [{"type": "text_delta", "text": t} for t in texts]
    return anthropic_block(index, {"type": "text", "text": ""}, deltas)


def anthropic_end(stop_reason: str = "end_turn", output_tokens: int = 33) -> Chunks:
    return [
        anthropic_event(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        ),
        anthropic_event("message_stop"),
    ]


def anthropic_prefix(texts: list[str]) -> Chunks:
    chunks: Chunks = [anthropic_start(), anthropic_event("ping")]
    chunks.append(
        anthropic_event("content_block_start", index=0, content_block={"type": "text", "text": ""})
    )
    chunks += [
        anthropic_event("content_block_delta", index=0, delta={"type": "text_delta", "text": t})
        for t in texts
    ]
    return chunks


def anthropic_text(texts: list[str]) -> Chunks:
    return [
        anthropic_start(),
        anthropic_event("ping"),
        *anthropic_text_block(0, texts),
        *anthropic_end(),
    ]


def split_json(value: Any, size: int) -> list[str]:
    """A JSON document cut into `size`-character fragments, as streamed tool arguments arrive."""
    text = json.dumps(value)
    return [text[i : i + size] for i in range(0, len(text), size)]
