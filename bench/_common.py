"""Helpers shared by the benchmarks: repeated runs, medians, machine description."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    return f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}"


def repeat(fn: Callable[[], float], runs: int) -> dict[str, float]:
    """Run `fn` (which answers a rate) `runs` times; median, min and max."""
    values = [fn() for _ in range(runs)]
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def percentiles(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"p50": at(0.50), "p99": at(0.99), "p99.9": at(0.999), "max": ordered[-1]}


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.start


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}/s"
