"""A price set that asks for no answer (`SetMarketPrice.answer`, a backtest's) decides
exactly what one that answers decides: the same log, only no price view built."""

from __future__ import annotations

from pathlib import Path

from sandex.engine import open_engine
from sandex.engine.kernel.commands import SetMarketPrice
from sandex.engine.tools.time_travel import log_hash
from tests.conftest import make_settings
from tests.support.command_helpers import funded_actor, limit_buy_command


def _run(db: Path, answer: bool) -> list[object]:
    engine = open_engine(db, make_settings(market_volatility="0"))
    try:
        me = funded_actor(engine.run_inline, "100000")
        engine.run_inline(limit_buy_command(me, "41000", "0.1"))
        return [
            engine.run_inline(SetMarketPrice(actor=me, market="BTCUSD", price=price, answer=answer))
            for price in ("42000", "40900", "41500")  # the second fills the order
        ]
    finally:
        engine.stop()


def test_a_price_set_without_an_answer_logs_what_one_with_an_answer_logs(tmp_path: Path) -> None:
    answered = _run(tmp_path / "a.db", True)
    quiet = _run(tmp_path / "q.db", False)
    assert quiet == [None, None, None]
    assert [view["last_price"] for view in answered] == ["42000.00", "40900.00", "41500.00"]  # type: ignore[index]
    assert log_hash(tmp_path / "a.db") == log_hash(tmp_path / "q.db")
