"""The peer's outbox: ordered, coalesced writes with backpressure past the high-water mark."""

from __future__ import annotations

import anyio
import pytest

from tether.rpc.outbox import Outbox, OutboxClosed

pytestmark = pytest.mark.anyio


async def test_bursts_coalesce_in_order_and_backpressure_applies() -> None:
    box = Outbox(high_water=10)
    writes: list[list[bytes]] = []
    release = anyio.Event()

    async def send(batch: list[bytes]) -> None:
        writes.append(batch)
        await release.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(box.run, send)
        for i in range(3):
            await box.put(b"%d" % i)  # under the mark: no waiting
        await anyio.wait_all_tasks_blocked()
        assert writes == [[b"0", b"1", b"2"]]  # one write for the burst
        blocked = anyio.Event()

        async def big() -> None:
            await box.put(b"x" * 20)  # over the mark: waits for the writer
            blocked.set()

        tg.start_soon(big)
        await anyio.wait_all_tasks_blocked()
        assert not blocked.is_set()
        release.set()
        with anyio.fail_after(2):
            await blocked.wait()
        box.close()
    assert writes == [[b"0", b"1", b"2"], [b"x" * 20]]


async def test_a_failed_write_breaks_the_outbox() -> None:
    box = Outbox()

    async def send(batch: list[bytes]) -> None:
        raise BrokenPipeError

    await box.put(b"a")
    await box.run(send)
    assert box.broken
    with pytest.raises(OutboxClosed):
        await box.put(b"b")
