"""The limits a transfer type is held to, in the service's TransferLimit shape.

The sandbox's only transfer limits are its per-withdrawal caps (withdrawal_fees.cap:
the real sandbox's figures, overridden by `withdrawal_caps`). Each is a
single-transaction limit as the service describes one: no `id`, only a `rule_id`,
`period_seconds` "0", and `remaining` always equal to `limit` (one withdrawal never
uses up what the next may send). Other transfer types have no limit here.
"""

from __future__ import annotations

from typing import Any

from engine.config.settings import Settings
from engine.domain.transfers.withdrawal_fees import DEFAULT_CAPS, cap
from engine.kernel.money import format_normal

LIMITED = "CRYPTO_WITHDRAWAL"


def transfer_limits(settings: Settings, transfer_type: str) -> dict[str, Any]:
    """ListTransferLimits' answer for `transfer_type`, one cap per asset, by asset."""
    if transfer_type != LIMITED:
        return {"items": []}
    items = []
    for asset in sorted({*DEFAULT_CAPS, *settings.withdrawal_caps}):
        limit = cap(settings, asset)
        if limit is None:  # pragma: no cover - every listed asset has a cap
            continue
        text = format_normal(limit)
        items.append(
            {
                "rule_id": f"sandbox-per-withdrawal-{asset}",
                "transfer_types": [LIMITED],
                "period_seconds": "0",
                "limit": text,
                "remaining": text,
                "limit_asset": asset,
            }
        )
    return {"items": items}
