"""USD valuations for other modules (withdrawal limits, fee quotes): the last print of
an asset's USD market."""

from __future__ import annotations

from decimal import Decimal

from sandex.engine.kernel.state import State


def usd_price(state: State, asset: str) -> Decimal | None:
    """The last print of the asset's USD market, for other modules' USD valuations."""
    tr = state.ext.get("trading")
    mk = tr.markets.get(asset + "USD") if tr is not None else None
    if mk is None or mk.print_step < 0:
        return None
    return mk.tick * mk.print_ticks
