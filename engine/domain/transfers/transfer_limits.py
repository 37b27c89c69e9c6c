"""The limits a transfer type is held to, in the service's TransferLimit shape.

The sandbox's only transfer limits are its per-withdrawal caps: for crypto withdrawals
withdrawal_fees.cap (the real sandbox's figures, overridden by `withdrawal_caps`), for
fiat withdrawals (wire, CUBIX, CBIT) `fiat_withdrawal_cap` in USD. Each is a
single-transaction limit as the service describes one: no `id`, only a `rule_id`,
`period_seconds` "0", and `remaining` always equal to `limit` (one withdrawal never
uses up what the next may send). Other transfer types have no limit here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sandex.engine.config.settings import Settings
from sandex.engine.domain.transfers.fiat_withdrawals import TRANSFER_TYPES
from sandex.engine.domain.transfers.withdrawal_fees import DEFAULT_CAPS, cap
from sandex.engine.kernel.money import format_normal

LIMITED = "CRYPTO_WITHDRAWAL"
# One cap covers every fiat withdrawal type; the service lists a limit's types by name.
FIAT_LIMITED = sorted(TRANSFER_TYPES.values())


def _limit(rule_id: str, types: list[str], limit: Decimal, asset: str) -> dict[str, Any]:
    text = format_normal(limit)
    return {
        "rule_id": rule_id,
        "transfer_types": types,
        "period_seconds": "0",
        "limit": text,
        "remaining": text,
        "limit_asset": asset,
    }


def transfer_limits(settings: Settings, transfer_type: str) -> dict[str, Any]:
    """ListTransferLimits' answer for `transfer_type`, one cap per asset, by asset."""
    if transfer_type in FIAT_LIMITED:
        fiat_cap = settings.fiat_withdrawal_cap
        return {"items": [_limit("sandbox-per-fiat-withdrawal-USD", FIAT_LIMITED, fiat_cap, "USD")]}
    if transfer_type != LIMITED:
        return {"items": []}
    items = []
    for asset in sorted({*DEFAULT_CAPS, *settings.withdrawal_caps}):
        limit = cap(settings, asset)
        if limit is None:  # pragma: no cover - every listed asset has a cap
            continue
        items.append(_limit(f"sandbox-per-withdrawal-{asset}", [LIMITED], limit, asset))
    return {"items": items}
