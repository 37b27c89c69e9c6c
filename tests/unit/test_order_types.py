"""The order types' table of rules: consistent rows, and a new type is one row."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from itertools import product
from pathlib import Path
from typing import Any

import pytest

from sandex.engine import Engine, open_engine
from sandex.engine.domain.trading import placement
from sandex.engine.domain.trading.order_types import (
    ALL_TIF,
    AMOUNT_FIELDS,
    HOLD_AT_LIMIT,
    HOLD_BASE,
    HOLD_QUOTE,
    ORDER_TYPES,
)
from sandex.engine.kernel.commands import Actor, CreateCustomer, CreateOrder, SandboxDeposit
from sandex.engine.kernel.errors import Invalid
from tests.conftest import make_settings


def test_every_row_is_consistent() -> None:
    for name, row in ORDER_TYPES.items():
        assert row.name == name
        assert row.default_tif in row.tifs <= set(ALL_TIF), name
        assert set(row.holds) == set(row.fields) <= {"BUY", "SELL"}, name
        for side, needed in row.fields.items():
            assert set(needed) <= set(AMOUNT_FIELDS), name
            assert row.shapes[side] == tuple(f in needed for f in AMOUNT_FIELDS), name
            # what a hold rule reads, the side's fields give
            hold = row.holds[side]
            assert hold != HOLD_QUOTE or "quote_amount" in needed, name
            assert hold != HOLD_AT_LIMIT or "price" in needed, name
            assert hold != HOLD_BASE or "base_amount" in needed, name
        if len(row.fields) < 2:
            assert row.side_refused, name


def _refusal(check: Any, *args: Any) -> str | None:
    try:
        check(*args)
    except Invalid as exc:
        return str(exc)
    return None


def test_the_shapes_shortcut_answers_what_the_field_checks_answer() -> None:
    """Every type, side (known or not) and combination of amount fields sent."""
    actor = Actor("c", "c")
    for row, side, given in product(
        ORDER_TYPES.values(), ("BUY", "SELL", "HOLD"), product((False, True), repeat=4)
    ):
        amounts = {f: "1" for f, sent in zip(AMOUNT_FIELDS, given, strict=True) if sent}
        cmd = _order(actor, row.name, side, **amounts)
        fast = _refusal(placement._check_fields, cmd, row)
        assert fast == _refusal(placement._field_checks, cmd, row, given), (row.name, side, given)
        assert (fast is None) == (row.shapes.get(side) == given)


def _engine_with_money(tmp_path: Path) -> tuple[Engine, Actor]:
    engine = open_engine(tmp_path / "types.db", make_settings(market_volatility=Decimal(0)))
    engine.start()
    made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
    actor = Actor(made["customer_id"], "c")
    for asset, amount in (("USD", "1000000"), ("BTC", "10")):
        engine.execute(
            SandboxDeposit(actor=actor, profile_id="default", asset=asset, amount=amount)
        )
    return engine, actor


def _order(actor: Actor, kind: str, side: str, **amounts: Any) -> CreateOrder:
    return CreateOrder(
        actor=actor, profile_id="default", side=side, market="BTCUSD", type=kind, **amounts
    )


def test_a_new_order_type_is_one_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows copied under new names behave as their originals: placement and execution
    read the row, not the type's name."""
    for original in ("LIMIT", "POST_ONLY_LIMIT", "MARKET"):
        monkeypatch.setitem(
            ORDER_TYPES, f"{original}_TWIN", replace(ORDER_TYPES[original], name=f"{original}_TWIN")
        )
    engine, actor = _engine_with_money(tmp_path)
    try:
        crossing = {"price": "43000", "base_amount": "0.01"}  # above the ladder's best ask
        for kind in ("LIMIT", "LIMIT_TWIN"):
            assert engine.execute(_order(actor, kind, "BUY", **crossing))["status"] == "FILLED"
        for kind in ("POST_ONLY_LIMIT", "POST_ONLY_LIMIT_TWIN"):
            assert engine.execute(_order(actor, kind, "BUY", **crossing))["status"] == "REJECTED"
        resting = {"price": "42000", "base_amount": "0.01"}
        for kind in ("LIMIT", "LIMIT_TWIN", "POST_ONLY_LIMIT", "POST_ONLY_LIMIT_TWIN"):
            assert engine.execute(_order(actor, kind, "BUY", **resting))["status"] == "OPEN"
        for kind in ("MARKET", "MARKET_TWIN"):
            done = engine.execute(_order(actor, kind, "BUY", quote_amount="100.00"))
            assert done["status"] == "FILLED" and done["time_in_force"] == "IOC"
            with pytest.raises(Invalid, match=f"price invalid: not allowed for BUY {kind} orders"):
                engine.execute(_order(actor, kind, "BUY", quote_amount="1.00", price="42000"))
    finally:
        engine.stop()
