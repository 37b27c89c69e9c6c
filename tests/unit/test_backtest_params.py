"""Strategy parameters: declared as class attributes, typed like their defaults (never a
float), set before `on_start`, refused by name when unknown or ill-typed, and reported in
the summary; `--param` on the command line reaches them."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sandex.api_adapter.cli import main
from sandex.engine.backtest import Api, BacktestError, Strategy, run
from sandex.engine.backtest.strategy import apply_params, declared_params, param_value, parse_params

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_704_067_200


class Params(Strategy):
    fast = 10
    rate = Decimal("0.5")
    share = 0.25
    long_only = True
    label = "x"
    _private = 3

    def helper(self) -> int:
        return 1

    def on_start(self, api: Api) -> None:
        self.seen = (self.fast, self.rate, self.share, self.long_only, self.label)


class Child(Params):
    fast = 20
    label = None  # type: ignore[assignment]  # no longer a parameter


def prices(tmp_path: Path) -> Path:
    path = tmp_path / "p.csv"
    path.write_text("timestamp,price\n" + "".join(f"{T0 + 60 * k},100\n" for k in range(3)))
    return path


def test_declared_parameters_are_public_class_attributes_of_a_parameter_type() -> None:
    assert declared_params(Params) == {
        "fast": 10,
        "rate": Decimal("0.5"),
        "share": 0.25,
        "long_only": True,
        "label": "x",
    }
    assert declared_params(Child) == {
        "fast": 20,
        "rate": Decimal("0.5"),
        "share": 0.25,
        "long_only": True,
    }
    assert declared_params(Strategy) == {}


@pytest.mark.parametrize(
    ("default", "value", "expected"),
    [
        (10, "12", 12),
        (10, " 7 ", 7),
        (10, 3, 3),
        (10, Decimal("4"), 4),
        (Decimal("0.5"), "0.125", Decimal("0.125")),
        (Decimal("0.5"), 2, Decimal(2)),
        (0.25, "0.1", Decimal("0.1")),
        (True, "false", False),
        (True, "Yes", True),
        (False, "1", True),
        (False, True, True),
        ("x", "slow", "slow"),
    ],
)
def test_a_value_takes_the_type_of_the_default(default: Any, value: Any, expected: Any) -> None:
    got = param_value("p", default, value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("default", "value", "why"),
    [
        (10, "10.5", "not an integer"),
        (10, "ten", "not an integer"),
        (10, True, "not an integer"),
        (10, 1.0, "float"),
        (Decimal(1), 0.1, "float"),
        (0.5, "abc", "not a number"),
        (Decimal(1), "NaN", "not a finite number"),
        (Decimal(1), "Infinity", "not a finite number"),
        (True, "maybe", "not a boolean"),
        ("x", 3, "not text"),
    ],
)
def test_a_bad_value_is_refused_naming_the_parameter(default: Any, value: Any, why: str) -> None:
    with pytest.raises(BacktestError, match=rf"^parameter fast={value!r}: .*{why}"):
        param_value("fast", default, value)


def test_an_unknown_parameter_is_refused_with_the_known_ones() -> None:
    with pytest.raises(BacktestError, match=r"parameter fats: Params has no such parameter"):
        parse_params(Params, {"fats": "3"})
    with pytest.raises(BacktestError, match=r"its parameters: fast, label, long_only, rate"):
        parse_params(Params, {"_private": "3"})


def test_apply_sets_the_instance_and_answers_every_parameter_used() -> None:
    s = Params()
    used = apply_params(s, {"fast": "3", "share": "0.5"})
    assert (s.fast, s.share, Params.fast) == (3, Decimal("0.5"), 10)
    assert used == {
        "fast": 3,
        "rate": Decimal("0.5"),
        "share": Decimal("0.5"),
        "long_only": True,
        "label": "x",
    }
    # a float default left as it is is reported as the Decimal of its shortest text
    assert apply_params(Params(), None)["share"] == Decimal("0.25")


def test_run_sets_parameters_before_on_start_and_reports_them(tmp_path: Path) -> None:
    s = Params()
    result = run(prices(tmp_path), "BTCUSD", strategy=s, params={"fast": 3, "long_only": "no"})
    assert s.seen == (3, Decimal("0.5"), 0.25, False, "x")
    assert result.summary["params"] == {
        "fast": 3,
        "rate": "0.5",
        "share": "0.25",
        "long_only": False,
        "label": "x",
    }
    # a class is instantiated, then given its parameters
    assert (
        run(prices(tmp_path), "BTCUSD", strategy=Params, params={"fast": 4}).summary["params"][
            "fast"
        ]
        == 4
    )


def test_run_refuses_a_bad_parameter_before_running(tmp_path: Path) -> None:
    with pytest.raises(BacktestError, match="parameter slow: Params has no such parameter"):
        run(prices(tmp_path), "BTCUSD", strategy=Params, params={"slow": 3})
    with pytest.raises(BacktestError, match=r"parameter fast='x': not an integer"):
        run(prices(tmp_path), "BTCUSD", strategy=Params, params={"fast": "x"})


def test_command_line_param(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = prices(tmp_path)
    base = [sys.executable, "-m", "sandex.api_adapter.cli", "backtest", "--data", str(data)]
    base += ["--market", "BTCUSD", "--no-progress"]
    strategy = ["--strategy", f"{ROOT / 'scenarios/backtests/ma_cross.py'}:MaCross"]
    out = tmp_path / "report"

    def sandex(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args], capture_output=True, text=True, cwd=ROOT)

    done = sandex(*strategy, "--param", "fast=3", "--param", "invest=0.5", "--out", str(out))
    assert done.returncode == 0, done.stderr
    summary = (out / "summary.json").read_text()
    assert '"fast": 3' in summary and '"slow": 30' in summary and '"invest": "0.5"' in summary
    for bad, said in [
        ("fast=3.5", "parameter fast='3.5': not an integer"),
        ("speed=3", "parameter speed: MaCross has no such parameter"),
        ("fast", "--param 'fast': write NAME=VALUE"),
    ]:
        assert main([*base[3:], *strategy, "--param", bad]) == 2  # in this process: quicker
        assert said in capsys.readouterr().err
