"""bench/ab.py's judgements: which benchmark scripts can measure another revision's
engine (only the public surfaces), which way each figure is better, and when a figure is
called worse (every pair agrees)."""

from __future__ import annotations

from pathlib import Path

from bench.ab import direction, every_pair_worse, internal_imports
from bench.run import BENCHES, kept_sections

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_http_benchmarks_use_only_public_surfaces() -> None:
    assert internal_imports(BENCH / "bench_http_orders.py") == []
    assert internal_imports(BENCH / "bench_withdrawals.py") == []


def test_scripts_importing_internals_are_named(tmp_path: Path) -> None:
    assert internal_imports(BENCH / "bench_memory.py")
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "helper.py").write_text("from sandex.engine.tools.verify import verify\n")
    script = tmp_path / "bench" / "x.py"
    script.write_text(
        "from sandex.engine import Engine, Settings\n"
        "from bench.helper import thing\n"
        "def f():\n    from sandex.engine import replay\n"
    )
    assert internal_imports(script) == ["engine.tools.verify (verify)", "engine (replay)"]


def test_directions() -> None:
    assert direction("orders") == "higher"
    assert direction("writer_max") == "higher"
    assert direction("orders.p99.9") == "lower"
    assert direction("startup_max") == "lower"
    assert direction("per_order") == "lower"
    assert direction("trivial.p99.9") == "reference"
    assert direction("orders.offered") == "count"
    assert direction("decided_calls") == "lower"
    assert direction("cpu_us_min") == "lower"
    assert direction("cpu_ratio") == "higher"
    # every figure of the table has a direction that is one of these
    figures = [f for b in BENCHES.values() for f in b.figures]
    assert {direction(f) for f in figures} <= {"higher", "lower", "reference", "count"}


def test_worse_only_when_every_pair_agrees() -> None:
    assert every_pair_worse("higher", [0.9, 0.95, 0.99])
    assert not every_pair_worse("higher", [0.9, 1.01, 0.8])
    assert every_pair_worse("lower", [1.1, 1.2])
    assert not every_pair_worse("lower", [1.1, 0.99])
    assert not every_pair_worse("reference", [0.5, 0.5])
    assert not every_pair_worse("higher", [])


def test_make_bench_keeps_the_sections_measured_apart() -> None:
    page = (
        "# Performance\n\nold table\n\n## Every benchmark's output\n\nold output\n\n"
        "## Backtests: speed and size (issue 17), measured apart\n\nby hand\n\n"
        "## Another, measured apart\n\nalso by hand\n"
    )
    kept = kept_sections(page)
    assert kept[1] == "## Backtests: speed and size (issue 17), measured apart"
    assert kept[-1] == "also by hand" and "old output" not in kept
    assert kept_sections("# Performance\n\n## Every benchmark's output\n") == []
