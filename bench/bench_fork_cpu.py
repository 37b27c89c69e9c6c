"""The CPU of a test's world (issue 32): one fork of the template, its login, its delete.

    python bench/bench_fork_cpu.py [--worlds 300] [--rounds 1] [--profile]

In this process, as the pytest plugin's thread mode has it: the server's default world
(the plugin's `SERVER_SETTINGS`) served by uvicorn on a thread, its template built as
the plugin builds the default one (a manual clock at `DEFAULT_START`, recorded, funded
with `DEFAULT_BALANCES`, snapshotted). Then `--worlds` times: the manager forks the
template (recorded, as the plugin asks), its bootstrap client takes a token over HTTP
(the login of the fixture) and the manager deletes it. In thread mode the server, the
suite and the fork share one GIL, so the process's CPU time (`time.process_time`, every
thread's), not the wall clock, is what a fork costs a suite on a busy machine.

Printed: CPU ms per fork+login+delete, per round and the median with min-max;
`--profile`: a cProfile of one round (this thread's CPU), by cumulative and by own time;
`--profile-server`: the server thread's, over the whole run.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine  # noqa: E402


def serve(folder: Path, profiler: Any = None) -> tuple[Any, Any, str, str, Any]:
    """(world, uvicorn server, url, operator secret, thread) as `start_thread` makes them,
    the server's thread profiled when asked."""
    from sandex.testing._server import thread_server

    world, server, listener, secret = thread_server(folder)
    port = listener.getsockname()[1]

    def run() -> None:
        if profiler is not None:
            profiler.enable()
        server.run(sockets=[listener])

    thread = threading.Thread(target=run, name="sandex-server", daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    return world, server, f"http://127.0.0.1:{port}", secret, thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worlds", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-login", action="store_true", help="fork and delete only")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--profile-server", action="store_true", help="a cProfile of the server's thread"
    )
    args = parser.parse_args()

    from bench._common import measured_tree

    measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's (bench/ab.py)
    from sandex.testing._server import CLIENT_ID, Address, SandexServer
    from sandex.testing._world import SandexWorld, default_template
    from sandex.testing.plugin import SEED, SNAPSHOT

    with tempfile.TemporaryDirectory(prefix="bench-fork-cpu-") as tmp:
        served = cProfile.Profile(time.thread_time) if args.profile_server else None
        world, server, url, secret, thread = serve(Path(tmp), served)
        manager = world.app.state.worlds
        sandbox = SandexServer(Address(url, CLIENT_ID, secret), "thread", started_here=True)
        from sandex.testing._defaults import DEFAULT_START

        made = sandbox.create_world(
            name="template", clock="manual", start_time=DEFAULT_START, seed=SEED, record=True
        )
        template = SandexWorld(made, made["client_id"], made["client_secret"], sandbox.http)
        default_template(template)
        template.snapshot(SNAPSHOT)
        time.sleep(0.5)  # a revision before the recorder saved the mark before answering

        def one() -> None:
            forked = manager.create(
                name="bench", from_world=template.id, from_snapshot=SNAPSHOT, recorded=True
            )
            if not args.no_login:
                made = {
                    **forked,
                    "base_url": f"{url}/w/{forked['id']}/v2",
                    "token_url": f"{url}/w/{forked['id']}/oauth2/token",
                }
                SandexWorld(made, template.client_id, template.client_secret, sandbox.http).token()
            manager.delete(forked["id"])

        for _ in range(5):  # warm-up: imports, the first request's analysis
            one()
        per_round = []
        for r in range(args.rounds):
            profiler = cProfile.Profile(time.thread_time) if args.profile and r == 0 else None
            start = time.process_time()
            if profiler is not None:
                profiler.enable()
            for _ in range(args.worlds):
                one()
            if profiler is not None:
                profiler.disable()
            per_round.append((time.process_time() - start) * 1000 / args.worlds)
            print(f"round {r + 1}: {per_round[-1]:.2f} ms CPU per world", flush=True)
            if profiler is not None:
                stats = pstats.Stats(profiler)
                stats.sort_stats("cumulative").print_stats(45)
                stats.sort_stats("tottime").print_stats(35)
        sandbox.close()
        server.should_exit = True
        thread.join(30)
        if served is not None:  # the whole run's, warm-up and template included
            stats = pstats.Stats(served)
            stats.sort_stats("cumulative").print_stats(60)
            stats.sort_stats("tottime").print_stats(30)
        world.stop()
    what = "fork+delete" if args.no_login else "fork+login+delete"
    print(machine())
    print(
        f"CPU per {what}: median {statistics.median(per_round):.2f} ms"
        f" (min {min(per_round):.2f}, max {max(per_round):.2f}, {args.rounds} rounds"
        f" of {args.worlds})"
    )


if __name__ == "__main__":
    main()
