"""Forking a store: the step a world forked from its template (issue 30) takes.

    python bench/bench_fork.py [--events 1000] [--forks 50] [--rounds 5]
                               [--postgres [postgresql://…/EMPTY_DB]]

The template is an SQLite database holding one funded customer and `--events` events
(bench/bench_store.py's `build_log`: sandbox deposits), open as a running engine holds
it. Each round forks it `--forks` times at its head (`fork(target)`: SQLite's backup of
a read snapshot into a new file, then the new store opened), each fork to a new file
that is closed and removed outside the timing. Printed: per round the p50 and p99 of
one fork; over the rounds the median of each with min–max. `--postgres` copies the
template to PostgreSQL (`sandex copy`) and forks it as well, each fork a new schema of
that database, as a world beside a PostgreSQL default database is, dropped outside the
timing as a deleted world is (`drop_store`): on the empty database a URL names, or
without one on a throwaway cluster with fsync on (tests/support/postgres_server.py;
SANDEX_TEST_POSTGRES names a server of one's own instead). Twice: back to back, and
paced, each fork waiting (outside the timing) until the store has made the schema it
keeps ready for the next fork, as a suite's forks find it between its tests (a
revision that keeps none forks the same way both times).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, measured_tree  # noqa: E402

ROOT = measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's

from bench.bench_store import build_log  # noqa: E402
from sandex.engine.runtime.composition import TABLES  # noqa: E402
from sandex.engine.store import Forking, capability, drop_store, locate, open_store  # noqa: E402


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def rounds(
    fork_one: Callable[[int], float], forks: int, count: int
) -> tuple[list[float], list[float]]:
    """(p50s, p99s) in ms of `count` rounds of `forks` forks each."""
    p50s, p99s = [], []
    n = 0
    fork_one(n)  # warm-up: imports, the page cache
    for _ in range(count):
        times = []
        for _ in range(forks):
            n += 1
            times.append(fork_one(n))
        p50s.append(_percentile(times, 0.50) * 1000)
        p99s.append(_percentile(times, 0.99) * 1000)
    return p50s, p99s


def line(name: str, p50s: list[float], p99s: list[float]) -> str:
    return (
        f"{name}: p50 {statistics.median(p50s):.2f} ms [{min(p50s):.2f}–{max(p50s):.2f}],"
        f" p99 {statistics.median(p99s):.2f} ms [{min(p99s):.2f}–{max(p99s):.2f}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--forks", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--postgres",
        nargs="?",
        const="throwaway",
        help="an empty PostgreSQL database's URL (none: a throwaway cluster)",
    )
    args = parser.parse_args()
    print(f"machine: {machine()}; tree: {ROOT}")
    with tempfile.TemporaryDirectory(prefix="sandex-bench-fork-") as tmp:
        folder = Path(tmp)
        template = folder / "template.db"
        build_log(template, args.events)
        store = open_store(template, tables=TABLES)
        forking = capability(store, Forking)
        assert forking is not None
        print(f"template: {store.last_position()} events, {template.stat().st_size} bytes")

        def sqlite_fork(n: int) -> float:
            target = folder / f"fork-{n}.db"
            started = time.perf_counter()
            forked = forking.fork(str(target))
            took = time.perf_counter() - started
            forked.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{target}{suffix}").unlink(missing_ok=True)
            return took

        try:
            print(line("fork at the head, SQLite", *rounds(sqlite_fork, args.forks, args.rounds)))
        finally:
            store.close()
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        if args.postgres == "throwaway":
            from tests.support.postgres_server import server

            os.environ["SANDEX_STATE_DIR"] = str(folder / "state")  # the copy's key file
            with server(fsync=True) as pg:
                print("PostgreSQL: a throwaway cluster, fsync on")
                postgres_rounds(template, pg.create("fork"), args)
        elif args.postgres:
            postgres_rounds(template, args.postgres, args)


def postgres_rounds(template: Path, db: str, args: argparse.Namespace) -> None:
    """The same forks on PostgreSQL: the template copied to `db`, each fork a schema."""
    from sandex.engine.tools.copy import copy

    copy(template, db)
    store = open_store(db, tables=TABLES)
    forking = capability(store, Forking)
    assert forking is not None

    def pg_fork(n: int, spare_ready: bool = False) -> float:
        target = locate(db).beside(f"w_bench_{n}")
        spare = getattr(forking, "_spare", None)  # the next fork's schema, being made
        if spare_ready and spare is not None:
            spare.join()
        started = time.perf_counter()
        forked = forking.fork(target.text)
        took = time.perf_counter() - started
        forked.close()
        drop_store(target)
        return took

    try:
        print(f"template on PostgreSQL: {store.last_position()} events")
        print(line("fork at the head, PostgreSQL", *rounds(pg_fork, args.forks, args.rounds)))
        print(
            line(
                "fork at the head, PostgreSQL, paced",
                *rounds(lambda n: pg_fork(n, True), args.forks, args.rounds),
            )
        )
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        store.close()


if __name__ == "__main__":
    main()
