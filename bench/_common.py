"""Helpers shared by the benchmarks: repeated runs, medians, machine description, and the
open-loop HTTP load generator."""

from __future__ import annotations

import asyncio
import os
import platform
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The benchmark code: this bench/'s parent, first on sys.path (the scripts put it there).
BENCH_CODE = Path(__file__).resolve().parents[1]
# The tree whose engine and adapter a benchmark measures, when not BENCH_CODE itself.
TREE_VARIABLE = "SANDEX_BENCH_TREE"


def measured_tree() -> Path:
    """The source tree to measure: BENCH_CODE, or the one $SANDEX_BENCH_TREE names, put on
    sys.path right after BENCH_CODE (so `bench.*` stays this copy's and `sandex` is the
    tree's). bench/ab.py runs one copy of bench/ against two revisions this way."""
    given = os.environ.get(TREE_VARIABLE)
    if not given:
        return BENCH_CODE
    tree = Path(given).resolve()
    if tree == BENCH_CODE:
        return tree
    if (BENCH_CODE / "sandex").is_dir():
        raise SystemExit(
            f"{TREE_VARIABLE}={tree}: this bench/ sits beside a sandex of its own, which"
            " Python would import instead; run a copy of bench/ alone (as bench/ab.py does)"
        )
    code = str(BENCH_CODE)
    if str(tree) not in sys.path:
        sys.path.insert(sys.path.index(code) + 1 if code in sys.path else 0, str(tree))
    return tree


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


# -- open-loop HTTP load: a constant arrival rate, latency from the due time -------------


def cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def pin(pid: int, cpu_set: set[int]) -> bool:
    """Pin every thread of process `pid` (threads it starts later inherit it); False when
    the machine does not allow it."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            os.sched_setaffinity(int(tid), cpu_set)
    except (OSError, AttributeError):
        return False
    return True


def server_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) of process `pid`, all its threads, and of its first
    thread (the event loop of `sandex serve` or uvicorn), from /proc: per request, the
    figures a machine busy with other work disturbs least."""

    def seconds(stat: str) -> float:
        fields = open(stat).read().rsplit(")", 1)[1].split()  # noqa: SIM115
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    return seconds(f"/proc/{pid}/stat"), seconds(f"/proc/{pid}/task/{pid}/stat")


def cpu_line(name: str, before: tuple[float, float], after: tuple[float, float], requests: float) -> str:  # fmt: skip
    """The server's CPU per request between two `server_cpu` readings."""
    n = max(requests, 1)
    whole, loop = (after[0] - before[0]) / n * 1e6, (after[1] - before[1]) / n * 1e6
    return (
        f"  server CPU per {name}: {whole:,.0f} µs, of which the event loop's thread {loop:,.0f} µs"
    )


def raw_request(method: str, host: str, port: int, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> bytes:  # fmt: skip
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes) -> int:
    writer.write(raw)
    head = await reader.readuntil(b"\r\n\r\n")
    m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
    if m:
        await reader.readexactly(int(m.group(1)))
    return int(head[9:12])


async def _open_loop(
    host: str, port: int, raws: list[bytes], rate: float, seconds: float, connections: int
) -> dict[str, Any]:
    total = max(1, int(rate * seconds))
    queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    late = [0.0]

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        while (item := await queue.get()) is not None:
            due, raw = item
            try:
                status = await _exchange(reader, writer, raw)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                status = 0
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
            latencies.append(time.perf_counter() - due)
            statuses[status] += 1
        writer.close()

    workers = [asyncio.create_task(connection()) for _ in range(connections)]
    await asyncio.sleep(0.2)  # the connections are open before the first request is due
    start = time.perf_counter()
    sent = 0
    while sent < total:
        now = time.perf_counter()
        while sent < total and start + sent / rate <= now:
            due = start + sent / rate
            late[0] = max(late[0], now - due)
            queue.put_nowait((due, raws[sent % len(raws)]))
            sent += 1
        if sent < total:
            await asyncio.sleep(max(0.0, start + sent / rate - time.perf_counter()))
    for _ in workers:
        queue.put_nowait(None)
    # bounded: what is not answered within 30 s after the last request was due is counted
    _, pending = await asyncio.wait(workers, timeout=30)
    for w in pending:
        w.cancel()
    elapsed = time.perf_counter() - start
    p = percentiles(latencies) if latencies else dict.fromkeys(("p50", "p99", "p99.9", "max"), 0.0)
    return {
        "offered": rate,
        "sent": total,
        "answered": len(latencies),
        "unanswered": total - len(latencies),
        "rps": len(latencies) / elapsed,
        "non_2xx": sum(n for s, n in statuses.items() if not 200 <= s < 300),
        "late_ms": late[0] * 1000,
        **{k: v * 1000 for k, v in p.items()},
    }


def open_loop(
    url: str,
    bodies: list[bytes],
    headers: dict[str, str],
    rate: float,
    seconds: float,
    connections: int = 32,
    server_pid: int | None = None,
) -> dict[str, Any]:
    """POST `bodies` in turn to `url` at a constant arrival rate over keep-alive
    connections: request i is due at start + i/rate whatever happened to the ones before
    it, and its latency counts from that moment, so a stall counts against every request
    queued behind it (no coordinated omission). p50/p99/p99.9/max in ms.

    With two CPUs or more, the server is pinned to the first and this generator to the
    last for the run, so that they do not take turns on one core."""
    m = re.match(r"http://([^:/]+):(\d+)(/.*)", url)
    assert m, url
    host, port, path = m.group(1), int(m.group(2)), m.group(3)
    heads = {"Content-Type": "application/json", **headers}
    raws = [raw_request("POST", host, port, path, b, heads) for b in bodies]
    mine = os.sched_getaffinity(0)
    avail = cpus()
    pinned = len(avail) > 1 and server_pid is not None and pin(server_pid, {avail[0]})
    if pinned:
        os.sched_setaffinity(0, {avail[-1]})
    try:
        result = asyncio.run(_open_loop(host, port, raws, rate, seconds, connections))
    finally:
        if pinned:
            os.sched_setaffinity(0, mine)
    result["pinned"] = (
        f"server on CPU {avail[0]}, generator on CPU {avail[-1]}" if pinned else "not pinned"
    )
    return result


def open_loop_line(name: str, r: dict[str, Any]) -> str:
    """One line that bench/run.py reads: the open-loop latencies of one route."""
    bad = f", {r['non_2xx']} non-2xx" if r["non_2xx"] else ""
    bad += f", {r['unanswered']} unanswered" if r["unanswered"] else ""
    return (
        f"  open loop, {name:<28} {r['offered']:>7,.0f} req/s offered"
        f"   p50 {r['p50']:7.2f} ms   p99 {r['p99']:7.2f} ms"
        f"   p99.9 {r['p99.9']:7.2f} ms   max {r['max']:7.2f} ms"
        f"   ({r['answered']:,} answered{bad}; pacer late at most {r['late_ms']:.1f} ms)"
    )
