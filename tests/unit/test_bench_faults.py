"""`make bench` carries issue 31's figures: what bench_faults prints is read into
figures, and the page's table shows each ratio beside its goal."""

from __future__ import annotations

from bench.ab import direction
from bench.bench_worlds import ratio_line
from bench.run import BENCHES, faults_rows

WITHOUT = ("without the gate", [2000.0, 2100.0, 2050.0])
OUTPUT = "\n".join(
    [
        ratio_line(
            "HTTP orders/s, the fault gate with no rule armed over without the gate",
            [0.99, 1.0, 0.97],
            ("gate, no rule", [1990.0, 2080.0, 2000.0]),
            WITHOUT,
        ),
        ratio_line(
            "HTTP orders/s, 100 rules of other operations armed over without the gate",
            [0.96, 0.98, 0.97],
            ("100 rules, other operations", [1950.0, 2040.0, 1990.0]),
            WITHOUT,
        ),
        ratio_line(
            "HTTP orders/s, 100 CreateOrder rules whose body does not match over without the gate",
            [0.9, 0.92, 0.93],
            ("100 rules, CreateOrder", [1850.0, 1900.0, 1890.0]),
            WITHOUT,
        ),
        *(
            ratio_line(
                f"orders per server CPU second, {name} over without the gate",
                ratios,
                (side, [4000.0, 4100.0, 4050.0]),
                ("without the gate", [4200.0, 4150.0, 4100.0]),
            ).replace(" req/s", " orders/CPU-s")
            for name, side, ratios in (
                ("the fault gate with no rule armed", "gate, no rule", [0.99, 0.98, 0.995]),
                (
                    "100 rules of other operations armed",
                    "100 rules, other operations",
                    [0.97, 0.96, 0.98],
                ),
                (
                    "100 CreateOrder rules whose body does not match",
                    "100 rules, CreateOrder",
                    [0.8, 0.85, 0.9],
                ),
            )
        ),  # fmt: skip
        "  sandex verify (without.db): OK",
    ]
)


def test_every_figure_of_the_fault_benchmark_is_read_from_what_it_prints() -> None:
    got = BENCHES["faults"].parse(OUTPUT)
    assert set(got) == set(BENCHES["faults"].figures)
    assert (got["gate_ratio"], got["gate_ratio_min"], got["gate_ratio_max"]) == (0.99, 0.97, 1.0)
    assert (got["other_ratio"], got["same_ratio"], got["without_rps"]) == (0.97, 0.92, 2050.0)
    assert got["same_rps"] == 1890.0
    assert (got["gate_cpu_ratio"], got["other_cpu_ratio"], got["same_cpu_ratio"]) == (
        0.99,
        0.97,
        0.85,
    )


def test_the_page_shows_the_gates_ratios_beside_their_goals() -> None:
    faults = BENCHES["faults"]
    faults.per_run, faults.used, faults.verified = [faults.parse(OUTPUT)], ["--rounds", "3"], ["OK"]
    try:
        rows = faults_rows(faults)
    finally:
        faults.per_run, faults.used, faults.verified = [], [], []
    assert [(row[7], row[8]) for row in rows] == [
        ("≥ 0.98", "**met**"),
        ("≥ 0.95", "**met**"),
        ("≥ 0.95", "**not met**"),
    ]
    assert all("OK" in row[-1] for row in rows)
    assert any("orders per server CPU second, ratio 0.85 [0.80–0.90]" in cell for cell in rows[2])


def test_each_fault_figure_is_better_one_way() -> None:
    assert direction("gate_ratio") == direction("same_rps") == "higher"
