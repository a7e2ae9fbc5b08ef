"""Timing helper shared by the benchmark scripts (they print figures; nothing here asserts on time)."""

from __future__ import annotations

import statistics
import time


def median_seconds(fn, repeats: int) -> float:
    """Median wall seconds of `repeats` calls of `fn`, after one warm-up call (library builds, interpreter caches)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
