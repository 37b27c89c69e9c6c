"""The accounts of the double-entry book (engine/kernel/ledger.py).

Profile accounts are `<profile_id>:available`, `<profile_id>:trading` (held for open
orders), `<profile_id>:withdrawing` (held for pending withdrawals) and
`<profile_id>:converting` (debited for a stablecoin conversion not yet settled): owned accounts,
which never go below zero. External accounts have no colon: `world` (outside the
platform), `fees` (platform fee income) and `house` (the simulated market's
counterparty, which trades with the outside world and may go below zero as the world
may).
"""

from __future__ import annotations

WORLD = "world"
FEES = "fees"
HOUSE = "house"


def available(profile_id: str) -> str:
    return f"{profile_id}:available"


def trading(profile_id: str) -> str:
    return f"{profile_id}:trading"


def withdrawing(profile_id: str) -> str:
    return f"{profile_id}:withdrawing"


def converting(profile_id: str) -> str:
    return f"{profile_id}:converting"
