"""What recording a test's world costs (`"record": true`, what the pytest plugin asks
of every fork so that a failed test leaves a replayable scenario, docs/testing.md).

    python bench/bench_world_recording.py [--tests 20] [--rounds 5]

On one in-process server (the plugin's thread mode), a template world is built (the
default template's deposits) and snapshotted twice over, once recorded and once not.
A "test" forks it, logs in, places a GTT order, advances the clock and reads the
order, then deletes its world. Each round runs `--tests` tests of each kind, paired
and alternating (recorded, plain, recorded, ...). Printed: per kind the median over
the rounds of a round's median test, with min–max, and the median of the per-round
ratios recorded / plain, with min–max.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, measured_tree  # noqa: E402

ROOT = measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's

from sandex.testing._server import SandexServer, private_folder, remove, start_thread  # noqa: E402
from sandex.testing._world import SandexWorld, default_template  # noqa: E402

GTT = {
    "market": "BTCUSD",
    "side": "BUY",
    "type": "LIMIT",
    "base_amount": "0.1",
    "price": "1000",
    "time_in_force": "GTT",
    "expiration_date": "1893603600000",
}


def template(server: SandexServer, record: bool) -> SandexWorld:
    made = server.create_world(
        clock="manual", start_time="2030-01-02T15:00:00Z", seed=0, record=record
    )
    world = SandexWorld(made, made["client_id"], made["client_secret"], server.http)
    default_template(world)
    world.snapshot("t")
    return world


def one_test(server: SandexServer, base: SandexWorld, record: bool) -> float:
    started = time.perf_counter()
    made = server.create_world(from_world=base.id, from_snapshot="t", record=record)
    world = SandexWorld(made, base.client_id, base.client_secret, server.http)
    order = world.post(f"/profiles/{world.profile_id}/orders", GTT)
    world.clock.advance(7200)
    assert world.get(f"/profiles/{world.profile_id}/orders/{order['id']}")["status"]
    server.delete_world(world.id)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"# {machine()}; tree {ROOT}")
    folder = private_folder("sandex-bench-")
    running = start_thread(folder)
    server = SandexServer(running.address, "thread", started_here=True)
    try:
        bases = {kind: template(server, kind) for kind in (True, False)}
        for kind in (True, False):
            one_test(server, bases[kind], kind)  # warm-up
        medians: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.rounds):
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.tests):
                for kind in (True, False):
                    times[kind].append(one_test(server, bases[kind], kind))
            for kind in (True, False):
                medians[kind].append(statistics.median(times[kind]) * 1000)
        for kind, name in ((True, "recorded"), (False, "plain")):
            m = medians[kind]
            print(f"{name}: {statistics.median(m):.1f} ms [{min(m):.1f}–{max(m):.1f}] a test")
        ratios = [r / p for r, p in zip(medians[True], medians[False], strict=True)]
        print(
            f"recorded / plain: {statistics.median(ratios):.2f}"
            f" [{min(ratios):.2f}–{max(ratios):.2f}]"
        )
    finally:
        server.close()
        running.stop()
        remove(folder)


if __name__ == "__main__":
    main()
