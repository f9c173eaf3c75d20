"""Per-delta cost of the OpenAI chat adapter, end to end over a real socket.

The mock LLM server streams N text deltas in the OpenAI chat wire format. The same bytes are read
twice per round: raw through httpx (the floor: socket, HTTP parsing, chunked decoding; it POSTs
the same request body the adapter sends, so the server answers both alike) and through the
adapter (SSE parsing, msgspec decoding, event building, the retry wrapper). The
adapter's overhead per delta is the difference divided by N. Time to first TextDelta is measured
separately, from the server's first body write to the adapter yielding the first delta, with the
rest of the stream held back a moment so it cannot pile into the same read.

    python bench/stream_adapter.py [N]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import anyio
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.providers.mock_llm_server import MockLLMServer, Reply  # noqa: E402
from tests.support.providers.wire import chat_chunk, chat_end  # noqa: E402
from tether.engine.history import TextPart, UserMessage  # noqa: E402
from tether.engine.providers.base import ChatRequest, ModelInfo, TextDelta  # noqa: E402
from tether.engine.providers.openai_chat_adapter import OpenAIChat  # noqa: E402

PATH = "/v1/chat/completions"
PIECE = 16 * 1024  # bytes per HTTP chunk the server writes
ROUNDS = 7
REQUEST = ChatRequest(system="", messages=[UserMessage([TextPart("go")])], tools=[])


def stream_body(n: int) -> tuple[bytes, bytes]:
    """The first delta's bytes and the rest of the stream, in the real chunk shape."""
    first = chat_chunk({"role": "assistant", "content": ""}) + chat_chunk({"content": "tok0 "})
    rest = b"".join(chat_chunk({"content": f"tok{i} "}) for i in range(1, n))
    rest += b"".join(c for c in chat_end() if isinstance(c, bytes))
    return first, rest


def pieces(first: bytes, rest: bytes, pause: float | None) -> list[bytes | float]:
    out: list[bytes | float] = [first]
    if pause is not None:
        out.append(pause)
    out += [rest[i : i + PIECE] for i in range(0, len(rest), PIECE)]
    return out


async def raw_read(client: httpx.AsyncClient, url: str, body: bytes) -> float:
    started = time.perf_counter()
    async with client.stream("POST", url, content=body) as response:
        async for _ in response.aiter_bytes():
            pass
    return time.perf_counter() - started


async def adapter_read(llm: OpenAIChat, n: int) -> tuple[float, float]:
    """Seconds for the whole stream, and the perf_counter() of the first TextDelta."""
    count, first_at = 0, 0.0
    started = time.perf_counter()
    async for event in llm.stream(REQUEST):
        if type(event) is TextDelta:
            if not count:
                first_at = time.perf_counter()
            count += 1
    elapsed = time.perf_counter() - started
    if count != n:
        raise SystemExit(f"expected {n} deltas, got {count}")
    return elapsed, first_at


async def measure(server: MockLLMServer, n: int) -> None:
    first, rest = stream_body(n)
    async with httpx.AsyncClient(timeout=60) as client:
        info = ModelInfo(id="bench:model", name="model")
        llm = OpenAIChat(server.url + "/v1", "sk-bench", "bench", info, client=client)
        _, body = llm._prepare(REQUEST)  # the body the adapter sends: a request the server takes
        raw_times, adapter_times, ttft = [], [], []
        for round_ in range(ROUNDS + 1):  # round 0 warms up imports and the connection
            server.script(PATH, Reply(chunks=pieces(first, rest, None)))
            raw = await raw_read(client, server.url + PATH, body)
            server.script(PATH, Reply(chunks=pieces(first, rest, None)))
            adapted, _ = await adapter_read(llm, n)
            server.first_body_byte_at = None
            server.script(PATH, Reply(chunks=pieces(first, rest, 0.02)))
            _, first_at = await adapter_read(llm, n)
            if round_:
                raw_times.append(raw)
                adapter_times.append(adapted)
                ttft.append(first_at - (server.first_body_byte_at or first_at))
    report(n, len(first) + len(rest), raw_times, adapter_times, ttft)


def report(
    n: int, size: int, raw_times: list[float], adapter_times: list[float], ttft: list[float]
) -> None:
    raw, adapted = statistics.median(raw_times), statistics.median(adapter_times)
    print(f"deltas: {n}   stream: {size / 1e6:.2f} MB   rounds: {ROUNDS} (median)")
    print(f"raw httpx read:        {raw * 1e3:8.1f} ms  ({raw / n * 1e6:6.2f} us/delta)")
    print(f"adapter:               {adapted * 1e3:8.1f} ms  ({adapted / n * 1e6:6.2f} us/delta)")
    print(f"adapter overhead:      {(adapted - raw) / n * 1e6:8.2f} us/delta")
    print(f"adapter / raw ratio:   {adapted / raw:8.2f}x")
    print(f"first TextDelta after the server's first byte: {statistics.median(ttft) * 1e3:.2f} ms")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    with MockLLMServer() as server:
        anyio.run(measure, server, n)


if __name__ == "__main__":
    main()
