"""`make bench` carries issue 32's figures: what bench_plugin prints is read into figures,
and the page's table shows each beside its goal."""

from __future__ import annotations

from bench import bench_plugin
from bench.ab import direction
from bench.run import BENCHES, plugin_rows

OUTPUT = "\n".join(
    [
        bench_plugin.line(
            "sandex_world per test (fork, login, teardown), thread mode: p50", [12, 15, 30], "ms"
        ),
        bench_plugin.line(
            "sandex_world per test (fork, login, teardown), thread mode: p99", [80, 90, 120], "ms"
        ),
        *(
            bench_plugin.line(f"sandex_world per test, its {part} alone: p50", [1, 2, 3], "ms")
            for part in ("setup", "login", "teardown")
        ),
        bench_plugin.line(
            "session start, thread mode: pytest start to the first test", [1.5, 1.2, 2], "s"
        ),
        bench_plugin.line(
            "session start, thread mode: the sandex_server fixture", [0.5, 0.4, 0.6], "s"
        ),
        "example suite of 200 tests, -n 2 and -n 0, 3 rounds: tests whose outcome or"
        " observations differ: 0",
        bench_plugin.line("example suite, -n 0: wall time", [20, 21, 22], "s"),
        bench_plugin.line("example suite, -n 0: fixture overhead", [8, 9, 12], "% of wall time"),
        bench_plugin.line("example suite, -n 2: wall time", [12, 13, 14], "s"),
        bench_plugin.line("example suite, -n 2: fixture overhead", [11, 12, 13], "% of wall time"),
    ]
)


def test_every_figure_of_the_plugin_benchmark_is_read_from_what_it_prints() -> None:
    figures = BENCHES["plugin"].parse(OUTPUT)
    assert set(figures) == set(BENCHES["plugin"].figures)
    assert (figures["world_p50_ms"], figures["world_p50_ms_min"]) == (15, 12)
    assert figures["world_p50_ms_max"] == 30
    assert (figures["n0_overhead_pct"], figures["n2_overhead_pct_max"]) == (9, 13)
    assert (figures["start_s"], figures["differing"]) == (1.5, 0)


def test_the_page_shows_issue_32s_figures_beside_their_goals() -> None:
    plugin = BENCHES["plugin"]
    plugin.per_run = [plugin.parse(OUTPUT)]
    plugin.used = ["--tests", "200", "--rounds", "3", "--workers", "2"]
    try:
        rows = plugin_rows(plugin)
    finally:
        plugin.per_run, plugin.used = [], []
    world, n0, n2, start = rows
    assert (world[7], world[8]) == ("p50 ≤ 20 ms, p99 ≤ 100 ms", "**met**")
    assert (n0[8], n2[8]) == ("**met**", "**not met**")  # 9% and 12%
    assert n2[7] == "≤ 10%; identical results to -n 0" and n2[10] == "0 tests differ"
    assert (start[7], start[8]) == ("≤ 1 s", "**not met**")


def test_each_plugin_figure_is_better_one_way() -> None:
    for figure in BENCHES["plugin"].figures:
        if figure != "differing":
            assert direction(figure) == "lower", figure
    assert direction("differing") == "count"
