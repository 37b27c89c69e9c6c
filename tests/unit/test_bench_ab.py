"""bench/ab.py's judgements: which benchmark scripts can measure another revision's
engine (only the public surfaces), which way each figure is better, and when a figure is
called worse (every pair agrees)."""

from __future__ import annotations

import re
from pathlib import Path

from bench.ab import direction, every_pair_worse, internal_imports
from bench.run import BENCHES, MEASURED_APART, kept_sections

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


def test_the_pages_hand_sections_are_current_figures_not_history() -> None:
    # docs/performance.md holds current figures, history lives in git: one kept section per
    # area, and no branch names, rounds or before/after tables in them
    kept = kept_sections((BENCH.parent / "docs" / "performance.md").read_text())
    headings = [line for line in kept if line.startswith("## ")]
    assert headings and all(h.endswith(MEASURED_APART) for h in headings)
    areas = [h.split(" (")[0] for h in headings]
    assert len(set(areas)) == len(areas), areas
    text = "\n".join(kept)
    assert not re.findall(r"\b[iw]\d{2}-[a-z0-9]+\b", text)
    assert not re.findall(r"\b(?:first|second|third|fourth|this|last) round\b", text, re.I)
    assert not re.findall(r"\|\s*`?(?:before|main)`?\s*\|", text)
