"""Engine commands that tests driving an engine directly (no HTTP) start from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sandex.engine.kernel.commands import Actor, CreateCustomer, CreateOrder, SandboxDeposit


def funded_actor(run: Callable[[Any], Any], usd: str) -> Actor:
    """A bootstrap customer `c` (secret `s`) with `usd` deposited; `run` is the engine's
    `execute` or `run_inline`."""
    made = run(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
    me = Actor(made["customer_id"], "c")
    run(SandboxDeposit(actor=me, profile_id="default", asset="USD", amount=usd))
    return me


def limit_buy_command(me: Actor, price: str, amount: str) -> CreateOrder:
    return CreateOrder(
        actor=me,
        profile_id="default",
        side="BUY",
        market="BTCUSD",
        type="LIMIT",
        price=price,
        base_amount=amount,
    )
