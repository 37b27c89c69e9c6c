"""Each vocabulary of the API (order types, time in force, statuses, sides, markets,
networks, transfer types...) is declared once, in the domain module that owns the
concept; the adapter's request Literals and answer enums (and so the OpenAPI document's
`enum` lists) are derived from it. Two checks: the adapter's enums equal the domain's,
and no module outside a vocabulary's owner lists its values again."""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

from sandex.api_adapter import identity_bodies, request_bodies, response_shapes
from sandex.api_adapter.routes import orders as order_routes
from sandex.engine.domain import customers, quotes
from sandex.engine.domain.identity import identities
from sandex.engine.domain.trading import order, order_types
from sandex.engine.domain.transfers import (
    deposit_addresses,
    fiat_accounts,
    funding,
    networks,
    transfer_records,
)
from sandex.engine.kernel import money

ROOT = Path(__file__).resolve().parents[2]
TRADING = "engine/domain/trading"
TRANSFERS = "engine/domain/transfers"

# name -> (the domain's values, the module that owns them)
VOCABULARIES: dict[str, tuple[tuple[str, ...], str]] = {
    "side": (order.SIDE_NAMES, f"{TRADING}/order.py"),
    "order status": (order.ORDER_STATUSES, f"{TRADING}/order.py"),
    "order type": (order_types.ORDER_TYPE_NAMES, f"{TRADING}/order_types.py"),
    "time in force": (order_types.ALL_TIF, f"{TRADING}/order_types.py"),
    "market": (tuple(money.MARKETS), "engine/kernel/money.py"),
    "crypto network": (networks.CRYPTO_NETWORKS, f"{TRANSFERS}/networks.py"),
    "fiat network": (networks.FIAT_NETWORKS, f"{TRANSFERS}/networks.py"),
    "transfer type": (transfer_records.TRANSFER_TYPE_NAMES, f"{TRANSFERS}/transfer_records.py"),
    "transfer status": (transfer_records.TRANSFER_STATUSES, f"{TRANSFERS}/transfer_records.py"),
    "transfer direction": (transfer_records.DIRECTIONS, f"{TRANSFERS}/transfer_records.py"),
    "secondary status": (
        deposit_addresses.SECONDARY_STATUSES,
        f"{TRANSFERS}/deposit_addresses.py",
    ),
    "routing number type": (funding.ROUTING_TYPES, f"{TRANSFERS}/funding.py"),
    "instructions status": (funding.INSTRUCTIONS_STATUSES, f"{TRANSFERS}/funding.py"),
    "fiat account status": (fiat_accounts.STATUSES, f"{TRANSFERS}/fiat_accounts.py"),
    "identity status": (identities.STATUSES, "engine/domain/identity/identities.py"),
    "profile type": (customers.PROFILE_TYPES, "engine/domain/customers.py"),
    "quote execution status": (quotes.EXECUTION_STATUSES, "engine/domain/quotes.py"),
}


def _members(values: Any) -> tuple[str, ...]:
    if isinstance(values, type) and issubclass(values, enum.Enum):
        return tuple(m.value for m in values)
    return tuple(get_args(values))


# Every adapter enum, by the vocabulary it spells, in the order the document lists it.
ADAPTER_ENUMS = [
    ("side", request_bodies.Side),
    ("side", response_shapes.OrderSide),
    ("order status", response_shapes.OrderStatus),
    ("order status", order_routes.OrderStatus),
    ("order type", request_bodies.OrderType),
    ("order type", response_shapes.OrderType),
    ("time in force", request_bodies.TimeInForce),
    ("time in force", response_shapes.TimeInForce),
    ("market", request_bodies.MarketName),
    ("market", response_shapes.Market),
    ("crypto network", request_bodies.CryptoNetwork),
    ("crypto network", response_shapes.CryptoNetwork),
    ("transfer type", request_bodies.TransferType),
    ("transfer type", response_shapes.TransferType),
    ("transfer status", request_bodies.TransferStatus),
    ("transfer status", response_shapes.TransferStatus),
    ("transfer direction", response_shapes.TransferDirection),
    ("secondary status", request_bodies.SecondaryStatus),
    ("secondary status", response_shapes.SecondaryStatusName),
    ("routing number type", request_bodies.RoutingNumberType),
    ("routing number type", response_shapes.FiatWireAccountType),
    ("instructions status", response_shapes.FiatDepositInstructionsStatus),
    ("fiat account status", response_shapes.FiatAccountStatus),
    ("identity status", identity_bodies.Status),
    ("profile type", response_shapes.ProfileType),
    ("quote execution status", response_shapes.QuoteExecutionStatus),
]


@pytest.mark.parametrize(
    ("name", "adapter"), ADAPTER_ENUMS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(ADAPTER_ENUMS)]
)
def test_every_adapter_enum_is_the_domains_vocabulary(name: str, adapter: Any) -> None:
    assert _members(adapter) == VOCABULARIES[name][0]


def test_the_fiat_deposit_network_is_a_fiat_network() -> None:
    field = request_bodies.CreateFiatDepositInstructionsRequest.model_fields["fiat_network"]
    assert get_args(field.annotation) == networks.FIAT_DEPOSIT_NETWORKS
    assert set(networks.FIAT_DEPOSIT_NETWORKS) <= set(networks.FIAT_NETWORKS)


def test_order_type_rows_are_the_order_type_vocabulary() -> None:
    assert set(order_types.ORDER_TYPES) == set(order_types.ORDER_TYPE_NAMES)
    for row in order_types.ORDER_TYPES.values():
        assert row.tifs <= set(order_types.ALL_TIF)
        assert set(row.fields) <= set(order.SIDE_NAMES)


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for package in ("engine", "api_adapter"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            yield rel, ast.parse(path.read_text(encoding="utf-8"), rel)


def _listings(tree: ast.Module) -> Iterator[tuple[int, tuple[str, ...]]]:
    """Every tuple, list or set written out (a Literal's arguments are a tuple) with
    two strings or more: the values it lists."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            texts = tuple(
                e.value
                for e in node.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            )
            if len(texts) >= 2 and len(texts) == len(node.elts):
                yield node.lineno, texts


def test_no_module_outside_a_vocabularys_owner_lists_its_values() -> None:
    """A listing of two or more values, all of one vocabulary (the whole of it or a
    subset such as "the immediate times in force"), belongs to the vocabulary's owner;
    elsewhere it is a second declaration that can drift from the first."""
    found = []
    for rel, tree in _sources():
        for line, texts in _listings(tree):
            for name, (values, owner) in VOCABULARIES.items():
                if rel != owner and set(texts) <= set(values):
                    found.append(f"{rel}:{line}: {name} {texts}")
    assert found == []


def test_the_listing_check_sees_a_second_declaration() -> None:
    tree = ast.parse('Side = Literal["BUY", "SELL"]\nX = frozenset({"IOC", "FOK"})\n')
    assert sorted(texts for _, texts in _listings(tree)) == [("BUY", "SELL"), ("IOC", "FOK")]
