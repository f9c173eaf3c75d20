"""The scripted provider: a file of model rounds that the engine streams like a real model.

Format (JSON; see docs/scripted-provider.md):

    {"model": {"name": "...", "context_window": 8000},
     "rounds": [{"events": [{"thought": "..."}, {"text": "...", "repeat": 3},
                            {"tool_call": {"id": "c1", "name": "read_file", "arguments": {...}}},
                            {"usage": {"input": 120, "output": 30}}, {"delay": 0.5},
                            {"error": {"message": "...", "status": 429}}, {"finish": "length"}]}]}

Each provider request consumes the next round; running out of rounds is a provider error.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any, Literal

import anyio
import msgspec

from tether.engine.providers import base as llm
from tether.errors import ProviderError


class ToolCallStep(msgspec.Struct):
    name: str
    arguments: Any = msgspec.field(default_factory=dict)
    id: str | None = None


class ErrorStep(msgspec.Struct):
    message: str
    status: int | None = None
    retryable: bool = False


class UsageStep(msgspec.Struct):
    input: int
    output: int


class Step(msgspec.Struct, forbid_unknown_fields=True):
    text: str | None = None
    repeat: int = 1
    thought: str | None = None
    tool_call: ToolCallStep | None = None
    usage: UsageStep | None = None
    delay: float | None = None
    error: ErrorStep | None = None
    finish: Literal["stop", "tool_calls", "length", "refusal"] | None = None


class Round(msgspec.Struct):
    events: list[Step]


class ModelSection(msgspec.Struct, forbid_unknown_fields=True):
    name: str = "scripted"
    context_window: int = 128_000
    max_output_tokens: int = 8_192
    images: bool = False
    reasoning_levels: list[str] = []
    default_reasoning: str | None = None
    input_price: float | None = None
    output_price: float | None = None
    cached_input_price: float | None = None
    currency: str = "USD"


class Script(msgspec.Struct):
    rounds: list[Round]
    model: ModelSection = msgspec.field(default_factory=ModelSection)


def load_script(path: Path) -> Script:
    try:
        return msgspec.json.decode(path.read_bytes(), type=Script)
    except (OSError, msgspec.DecodeError) as exc:
        raise ProviderError(f"cannot load script {path}: {exc}") from None


class ScriptedModel:
    def __init__(
        self, script: Script, model_id: str = "scripted", *, keep_requests: bool = False
    ) -> None:
        """`keep_requests`: remember every request (for tests to inspect; a long session's
        requests would otherwise pile up, each holding the history of its time)."""
        self.script = script
        self.keep_requests = keep_requests
        self._next = 0
        m = script.model
        self._info = llm.ModelInfo(
            model_id,
            m.name,
            m.context_window,
            m.max_output_tokens,
            images=m.images,
            reasoning_levels=tuple(m.reasoning_levels),
            default_reasoning=m.default_reasoning,
            input_price=m.input_price,
            output_price=m.output_price,
            cached_input_price=m.cached_input_price,
            currency=m.currency,
        )
        self.requests: list[llm.ChatRequest] = []  # what the engine asked, when kept

    @property
    def info(self) -> llm.ModelInfo:
        return self._info

    async def stream(self, request: llm.ChatRequest) -> AsyncGenerator[llm.StreamEvent, None]:
        if self._next >= len(self.script.rounds):
            raise ProviderError(
                f"scripted provider: the script has no round {self._next + 1} "
                f"(it holds {len(self.script.rounds)})"
            )
        if self.keep_requests:
            self.requests.append(request)
        rnd = self.script.rounds[self._next]
        self._next += 1
        finish: llm.FinishReason | None = None
        called = False
        for i, step in enumerate(rnd.events):
            async for item in _play(step, f"call_{self._next}_{i}"):
                called = called or isinstance(item, llm.ToolCallDelta)
                yield item
            finish = step.finish or finish
        yield llm.Finish(finish or ("tool_calls" if called else "stop"))


async def _play(step: Step, default_id: str) -> AsyncIterator[llm.StreamEvent]:
    if step.delay is not None:
        await anyio.sleep(step.delay)
    if step.error is not None:
        e = step.error
        raise ProviderError(e.message, status=e.status, retryable=e.retryable)
    if step.thought is not None:
        yield llm.ThoughtDelta(step.thought)
    if step.text is not None:
        delta = llm.TextDelta(step.text)
        for _ in range(step.repeat):
            yield delta
    if step.tool_call is not None:
        tc = step.tool_call
        args = (
            tc.arguments
            if isinstance(tc.arguments, str)
            else msgspec.json.encode(tc.arguments).decode()
        )
        yield llm.ToolCallDelta(tc.id or default_id, tc.name, args)
    if step.usage is not None:
        yield llm.Usage(step.usage.input, step.usage.output)
