"""A longer fuzz run than the test suite's: hostile frames (every ACP method with wild params,
malformed JSON, deep nesting, junk) into `tether acp` over real pipes, in both framings. Prints
frames tried, probes answered and crashes (target 0); a crash restarts the agent and goes on.

    python bench/fuzz.py [--batches 500]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, settings

from tests.support.fuzz_frames import Driver, batches

ALL_CHECKS: list[HealthCheck] = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
    HealthCheck.large_base_example,
]


def run(framing: str, count: int) -> tuple[int, int, int]:
    """(frames sent, probes answered, crashes) for `count` batches."""
    stats = {"frames": 0, "ok": 0, "crashes": 0}
    with tempfile.TemporaryDirectory() as home:
        driver = [Driver(Path(home), framing)]

        @settings(
            max_examples=count,
            deadline=None,
            database=None,
            suppress_health_check=ALL_CHECKS,
        )
        @given(batches(framing))
        def one(data: bytes) -> None:
            stats["frames"] += (
                data.count(b"\n") if framing == "ndjson" else data.count(b"Content-Length")
            )
            try:
                driver[0].send(data)
                alive = driver[0].still_serving()
            except BrokenPipeError:
                alive = False
            if alive and driver[0].error is None:
                stats["ok"] += 1
                return
            stats["crashes"] += 1
            print(f"crash after: {data[:200]!r} ({driver[0].error})", file=sys.stderr)
            driver[0].proc.kill()
            driver[0] = Driver(Path(home), framing)

        one()
        driver[0].close()
    return stats["frames"], stats["ok"], stats["crashes"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=500)
    args = parser.parse_args()
    for framing in ("ndjson", "content-length"):
        started = time.perf_counter()
        frames, ok, crashes = run(framing, args.batches)
        took = time.perf_counter() - started
        print(
            f"{framing:15} frames tried {frames:6}  probes answered {ok:5}  crashes {crashes}  ({took:.0f} s)"
        )


if __name__ == "__main__":
    main()
