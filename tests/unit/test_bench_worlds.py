"""`make bench` carries issue 30's figures: what bench_fork and bench_worlds print is
read into figures, and the page's table shows each beside its goal."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import bench_fork, bench_worlds
from bench.ab import direction
from bench.run import BENCHES, Bench, worlds_rows

WORLDS_OUTPUT = "\n".join(
    [
        bench_worlds.create_line([38.0, 41.0, 45.0], [50.0, 55.0, 70.0]),
        bench_worlds.first_line([30.0, 31.0, 29.0], [0.8, 0.7, 0.9]),
        bench_worlds.ratio_line(
            "HTTP orders/s, a non-default world over the default world",
            [0.97, 0.99, 1.01],
            ("a world", [2500.5, 2600.0, 2400.0]),
            ("default world", [2550.0, 2650.0, 2450.0]),
        ),
        bench_worlds.ratio_line(
            "HTTP orders/s, 8 worlds at once over one world alone",
            [0.8, 0.85, 0.95],
            ("8 worlds", [2000.0, 2100.0, 2200.0]),
            ("one world", [2500.0, 2400.0, 2450.0]),
        ),
        bench_worlds.alive_line(1000, [1.1, 0.9, 0.95, 0.97, 0.99], 0.98, (80, 1060), (15, 4015))
        + "; answered 1000 of 1000; made in 90 s",
        "  sandex verify (a world): OK",
    ]
)
FORK_OUTPUT = "\n".join(
    [
        bench_fork.line("fork at the head, SQLite", [14.0, 15.5, 13.0], [30.0, 61.0, 65.0]),
        bench_fork.line("fork at the head, PostgreSQL", [93.0, 85.0, 207.0], [227.0, 132.0, 461.0]),
        bench_fork.line(
            "fork at the head, PostgreSQL, paced", [40.0, 41.0, 50.0], [60.0, 61.0, 90.0]
        ),
    ]
)


def test_every_figure_of_the_worlds_benchmarks_is_read_from_what_they_print() -> None:
    worlds = BENCHES["worlds"].parse(WORLDS_OUTPUT)
    assert set(worlds) == set(BENCHES["worlds"].figures)
    assert (worlds["create_ms"], worlds["create_ms_min"], worlds["create_ms_max"]) == (41, 38, 45)
    assert (worlds["world_ratio"], worlds["eight_ratio"], worlds["rss_mib"]) == (0.99, 0.85, 0.97)
    assert (worlds["alive"], worlds["answered"], worlds["threads_after"]) == (1000, 1000, 4015)
    forks = BENCHES["fork"].parse(FORK_OUTPUT)
    assert set(forks) == set(BENCHES["fork"].figures)
    assert (forks["fork_p50_ms"], forks["fork_p99_ms_max"], forks["pg_fork_p50_ms"]) == (14, 65, 93)
    assert forks["pg_paced_p50_ms"] == 41


def test_the_page_shows_issue_30s_figures_beside_their_goals() -> None:
    fork, worlds = BENCHES["fork"], BENCHES["worlds"]
    fork.per_run, worlds.per_run = [fork.parse(FORK_OUTPUT)], [worlds.parse(WORLDS_OUTPUT)]
    fork.used = ["--events", "1000", "--forks", "50", "--rounds", "3"]
    worlds.used = ["--rounds", "3"]
    worlds.verified = ["OK"]
    try:
        rows = {row[0]: row for row in worlds_rows(fork, worlds)}
    finally:
        fork.per_run, worlds.per_run, worlds.verified, fork.used, worlds.used = [], [], [], [], []
    met = {label.split(":")[0].split(" (")[0]: row[8] for label, row in rows.items()}
    assert len(rows) == 8
    # SQLite's p50 is met but its p99 is not; PostgreSQL's p50 is met, back to back and paced
    sqlite, postgres, paced = (r for label, r in rows.items() if label.startswith("fork"))
    assert (sqlite[7], sqlite[8]) == ("p50 ≤ 15 ms, p99 ≤ 60 ms", "**not met**")
    assert (postgres[7], postgres[8]) == ("p50 ≤ 100 ms", "**met**")
    assert (paced[7], paced[8]) == ("p50 ≤ 100 ms", "**met**")
    assert met["create an empty world"] == "**not met**"  # 41 ms
    assert met["first request to an unloaded world"] == "**met**"
    assert met["1,000 worlds alive"] == "**met**"  # 0.97 MiB, all answered
    assert met["HTTP orders/s in a non-default world over the default world, same server"] == (
        "**met**"
    )
    assert met["HTTP orders/s, 8 worlds driven at once"] == "**not met**"  # 0.85


def test_each_worlds_figure_is_better_one_way() -> None:
    assert direction("create_ms") == direction("first_ms_max") == "lower"
    assert direction("rss_mib") == direction("fork_p99_ms_min") == "lower"
    assert direction("world_ratio") == direction("eight_rps") == "higher"
    assert direction("alive") == direction("answered") == "count"


def test_a_run_that_fails_in_one_phase_keeps_the_figures_of_the_phases_before(
    tmp_path: Path,
) -> None:
    """A long benchmark whose last phase breaks (1,000 worlds that never answered) still
    gives the page the figures its other phases printed."""
    script = tmp_path / "bench_phases.py"
    script.write_text("print('first: 5', flush=True)\nraise SystemExit('second phase broke')\n")
    bench = Bench(str(script), [], [], 1, {"first": r"first: (\d+)", "second": r"second: (\d+)"})
    bench.run(quick=False, runs=1)
    assert bench.failed == 1
    assert bench.values("first") == [5] and bench.values("second") == []


def test_a_worlds_phase_that_fails_leaves_the_other_phases_run_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def broken(*args: object) -> None:
        raise AssertionError("a world did not answer")

    monkeypatch.setattr(bench_worlds, "creates", broken)
    monkeypatch.setattr(bench_worlds, "first_requests", lambda *a: print("first: ran"))
    monkeypatch.setattr(sys, "argv", ["bench_worlds.py", "--only", "create", "first"])
    monkeypatch.setenv("SANDEX_STATE_DIR", str(tmp_path))
    assert bench_worlds.main() == 1
    out = capsys.readouterr().out
    assert "phase create failed: AssertionError('a world did not answer')" in out
    assert "first: ran" in out


def test_the_worlds_order_bodies_price_their_takers_inside_the_band_wherever_prices_are() -> None:
    """bench_worlds' order phases stop at the first non-2xx: an IOC at a fixed price fell
    outside the 15% taker band once the wall clock had moved a world's prices."""
    from decimal import Decimal

    from bench.bench_http_orders import BODIES

    for btc, eth in (("38967.25", "2232.85"), ("61000", "4100.5")):
        tickers = {
            "BTCUSD": {"best_ask": {"price": btc}, "best_bid": {"price": btc}},
            "ETHUSD": {"best_ask": {"price": eth}, "best_bid": {"price": eth}},
        }
        bodies = bench_worlds.priced(BODIES, tickers)
        assert [b for b in bodies if "time_in_force" not in b] == [
            b for b in BODIES if "time_in_force" not in b
        ]
        takers = [b for b in bodies if b.get("time_in_force") == "IOC"]
        assert len(takers) == 2
        for body in takers:
            best = Decimal(tickers[body["market"]]["best_ask"]["price"])
            price = Decimal(body["price"])
            crosses = price > best if body["side"] == "BUY" else price < best
            assert crosses and abs(price - best) < best * Decimal("0.15"), body
