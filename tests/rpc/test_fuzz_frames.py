"""Hostile input in bulk, over both framings: after every batch of fuzzed frames the agent still
answers a valid request, every frame it wrote validates, and it exits cleanly at the end."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.support.fuzz_frames import Driver, batches

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("framing", ["ndjson", "content-length"])
def test_fuzzed_frames_never_take_the_agent_down(tmp_path: Path, framing: str) -> None:
    driver = Driver(tmp_path, framing)
    try:

        @settings(
            max_examples=40,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(batches(framing))
        def one_batch(data: bytes) -> None:
            driver.send(data)
            assert driver.still_serving(), f"no answer after {data[:300]!r}"
            assert driver.error is None, driver.error

        one_batch()
    finally:
        code = driver.close()
    assert code == 0
    assert driver.error is None, driver.error
