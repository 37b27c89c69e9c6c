"""What the engine's CPU per order would be if it wrote less: a bound, not a figure.

Issue 20 asks for the engine threads' CPU per order (writer, committer, checkpointer, as
bench_wal.py measures it) at 90 µs or less. This measures the same phase three ways, each
in a fresh process, alternated in every round:

- **as built**: the domain's registry, every read model written in the group's commit;
- **without the event feed**: the engine composed without the feed's registration, so
  no feed item is built or written (the other read models are);
- **without any read model**: as above, and the writer hands the store no read-model
  row at all: only the log is written. The read side would answer nothing; the point is
  the floor that deciding, the log and its commit put under any read-model design.

The last two databases are not what the product writes, so `sandex verify` is not run
on them (it would report the missing rows); bench_wal.py verifies the as-built one.

    python bench/bench_bounds.py [--orders 6000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, measured_tree  # noqa: E402

ROOT = measured_tree()

VARIANTS = ("as built", "without the event feed", "without any read model")


def _child(variant: str, orders: int) -> dict[str, float]:
    """One run of `variant` in this process: the engine threads' CPU per order."""
    from bench.bench_wal import _engine_cpu, _send, _setup
    from sandex.engine.domain import feed
    from sandex.engine.domain.registrations import REGISTRATIONS
    from sandex.engine.kernel.registry import build_registry
    from sandex.engine.runtime.projection import Projection

    registry = None
    if variant != VARIANTS[0]:
        registry = build_registry(r for r in REGISTRATIONS if r is not feed.REGISTRATION)
    if variant == VARIANTS[2]:
        Projection.rows_for = lambda self, state, dirty: {}  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        engine, actors = _setup(Path(tmp) / "bounds.db", 1, registry)
        try:
            _send(engine, actors, orders, 32)  # warm-up
            cpu = _engine_cpu()
            seconds = _send(engine, actors, orders, 32)
            cpu = _engine_cpu() - cpu
        finally:
            engine.stop()
    return {"cpu_us": cpu / orders * 1e6, "rate": orders / seconds}


def _spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} [{min(values):{fmt}}–{max(values):{fmt}}]"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--orders", type=int, default=6000, help="orders in each phase")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.orders)))
        return 0
    print(machine())
    print(f"{args.orders:,} orders a phase, 32 in flight, wall clock, FULL; tree {ROOT}")
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    for _ in range(args.rounds):
        for variant in VARIANTS:
            out = subprocess.run(
                [sys.executable, __file__, "--child", variant, "--orders", str(args.orders)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs[variant].append(json.loads(out.splitlines()[-1]))
    base = [r["cpu_us"] for r in runs[VARIANTS[0]]]
    for variant in VARIANTS:
        cpu = [r["cpu_us"] for r in runs[variant]]
        ratio = [c / b for c, b in zip(cpu, base, strict=True)]
        print(
            f"{variant:<24} engine threads' CPU per order {_spread(cpu, '.0f')} µs,"
            f" / as built {_spread(ratio, '.2f')},"
            f" orders/s {_spread([r['rate'] for r in runs[variant]], ',.0f')}"
        )
    print(f"median of {args.rounds} rounds [min–max], each variant a fresh process per round")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
