"""Invariants of money movement under random sequences of transfer commands.

Deposits, fee quotes, withdrawals (by amount and by total, with and without a quote,
some forced to fail), internal transfers and clock moves, in any order. The writer
checks the ledger and the hold invariants after every command (`assert_invariants`);
this test keeps its own model of every available balance from the answers alone and
checks, step by step, that the engine agrees: no balance negative, no ref_id debited
twice, every asset's postings summing to zero, and at the end every withdrawal
COMPLETED or FAILED with the balances accounting for it exactly.
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandex.engine import format_time, open_engine, parse_time
from sandex.engine.domain.ledger import FEES, WORLD, available, withdrawing
from sandex.engine.domain.transfers.withdrawals import DEFAULT_CONFIRMATION_SECONDS
from sandex.engine.kernel.commands import (
    Actor,
    AdvanceClock,
    CreateCryptoWithdrawal,
    CreateCustomer,
    CreateInternalTransfer,
    CreateProfile,
    CreateWithdrawalFee,
    SandboxDeposit,
)
from sandex.engine.kernel.errors import (
    AlreadyExists,
    DomainError,
    ExceedMaxWithdraw,
    Expired,
    InsufficientFunds,
    Invalid,
)
from sandex.engine.store.locations import STATE_DIR_ENV
from sandex.engine.tools.verify import verify
from tests.conftest import make_settings
from tests.support.transfer_helpers import ADDRESSES

# (asset, network, unit of the generated amounts)
ROUTES = [
    ("BTC", "BITCOIN", Decimal("0.0001")),
    ("ETH", "BASE", Decimal("0.001")),
    ("USDC", "SOLANA", Decimal("0.5")),
]
PROFILES = 3
REF_IDS = ["r1", "r2", "r3", None, None]

amounts = st.integers(min_value=1, max_value=24)
deposits = st.integers(min_value=5, max_value=200)

deposit = st.tuples(
    st.just("deposit"), st.integers(0, PROFILES - 1), st.sampled_from(ROUTES), deposits
)
fee_quote = st.tuples(st.just("quote"), st.sampled_from(ROUTES), st.booleans(), amounts)
withdrawal = st.tuples(
    st.just("withdraw"),
    st.integers(0, PROFILES - 1),
    st.sampled_from(ROUTES),
    st.booleans(),  # by total rather than by amount
    amounts,
    st.one_of(st.none(), st.integers(0, 5)),  # which quote, if any
    st.sampled_from(REF_IDS),
    st.booleans(),  # memo sandbox:fail
    st.booleans(),  # pay a USDC withdrawal from USD
)
internal = st.tuples(
    st.just("internal"),
    st.integers(0, PROFILES - 1),
    st.sampled_from([1, 1, 1, 2, 0]),  # recipient offset; 0 sends to the sender itself
    st.sampled_from(ROUTES),
    amounts,
    st.sampled_from(REF_IDS),
)
advance = st.tuples(st.just("advance"), st.sampled_from([0.5, 1, 1, 2, 2, 5, 30, 61]))

steps = st.lists(
    st.one_of(deposit, fee_quote, fee_quote, withdrawal, withdrawal, withdrawal, internal, advance),
    min_size=10,
    max_size=40,
)


class Run:
    """One engine and the test's own model of the balances it should hold."""

    def __init__(self, db: Path | str) -> None:
        self.engine = open_engine(db, make_settings(durability="NORMAL")).start()
        made = self.engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
        self.actor = Actor(made["customer_id"], "c")
        self.profiles = [made["profile_id"]] + [
            self.engine.execute(CreateProfile(actor=self.actor, nickname=f"p{i}"))["id"]
            for i in range(1, PROFILES)
        ]
        self.model: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
        self.quotes: list[dict[str, Any]] = []
        self.withdrawals: dict[str, dict[str, Any]] = {}
        self.fees_due: dict[str, Decimal] = defaultdict(Decimal)
        self.refs: dict[tuple[str, str], str] = {}
        self.now = self.engine.clock.now()
        for who in range(PROFILES - 1):  # the last profile starts empty
            for route in ROUTES:
                self.deposit(who, route, 200)

    def run(self, command: Any) -> Any:
        return self.engine.execute(command)

    def available(self, pid: str, asset: str) -> Decimal:
        return self.engine.state.ledger.balance(available(pid), asset)  # type: ignore[no-any-return]

    def check_model(self) -> None:
        for (pid, asset), expected in self.model.items():
            assert self.available(pid, asset) == expected, (pid, asset)
            assert expected >= 0

    # -- steps ---------------------------------------------------------------------

    def deposit(self, who: int, route: tuple[str, str, Decimal], n: int) -> None:
        asset, _, unit = route
        pid = self.profiles[who]
        self.run(
            SandboxDeposit(actor=self.actor, profile_id=pid, asset=asset, amount=str(n * unit))
        )
        self.model[(pid, asset)] += n * unit
        if asset == "USDC":  # also fund the USD balance that may pay for USDC
            self.run(SandboxDeposit(actor=self.actor, profile_id=pid, asset="USD", amount=str(n)))
            self.model[(pid, "USD")] += n

    def quote(self, route: tuple[str, str, Decimal], by_total: bool, n: int) -> None:
        asset, network, unit = route
        size = {"total": str(n * unit)} if by_total else {"amount": str(n * unit)}
        cmd = CreateWithdrawalFee(
            actor=self.actor,
            asset=asset,
            crypto_network=network,
            destination_address=ADDRESSES[network],
            **size,
        )
        try:
            self.quotes.append(self.run(cmd))
        except Invalid as exc:  # a total that does not cover the fee
            assert by_total and "does not cover the fee" in exc.detail
        except ExceedMaxWithdraw as exc:  # refused as a withdrawal of that amount would be
            assert exc.meta is not None
            assert Decimal(exc.meta["amount"]) > Decimal(exc.meta["limit"])

    def withdraw(
        self,
        who: int,
        route: tuple[str, str, Decimal],
        by_total: bool,
        n: int,
        quote_index: int | None,
        ref_id: str | None,
        fail: bool,
        from_usd: bool,
    ) -> None:
        asset, network, unit = route
        pid = self.profiles[who]
        quoted = None
        if quote_index is not None and self.quotes:
            # Mostly a quote for this route; sometimes one for another, which must be refused.
            same = [q for q in self.quotes if (q["asset"], q["crypto_network"]) == (asset, network)]
            pool = same if same and quote_index < 4 else self.quotes
            quoted = pool[quote_index % len(pool)]
        fee_id = quoted["id"] if quoted else None
        paid_from = "USD" if from_usd and asset == "USDC" else asset
        size = {"total": str(n * unit)} if by_total else {"amount": str(n * unit)}
        cmd = CreateCryptoWithdrawal(
            actor=self.actor,
            profile_id=pid,
            asset=asset,
            crypto_network=network,
            destination_address=ADDRESSES[network],
            fee_id=fee_id,
            ref_id=ref_id,
            memo="sandbox:fail" if fail else None,
            balance_asset=paid_from if paid_from != asset else None,
            **size,
        )
        before = self.available(pid, paid_from)
        try:
            made = self.run(cmd)
        except AlreadyExists as exc:
            assert ref_id is not None and (pid, ref_id) in self.refs
            assert exc.meta is not None
            assert exc.meta["existing"]["id"] == self.refs[(pid, ref_id)]
            assert self.available(pid, paid_from) == before
            return
        except InsufficientFunds as exc:
            assert exc.meta is not None
            assert Decimal(exc.meta["available"]) < Decimal(exc.meta["needed"])
            assert Decimal(exc.meta["available"]) == self.model[(pid, paid_from)]
            return
        except Expired:
            assert quoted is not None and self.now >= parse_time(quoted["expires_at"])
            return
        except (ExceedMaxWithdraw, Invalid) as exc:
            assert self.available(pid, paid_from) == before, exc.detail
            return
        if quoted is not None:
            assert self.now < parse_time(quoted["expires_at"])
            assert made["fee"] == quoted["fee"]
            assert Decimal(made["amount"]) <= Decimal(quoted["amount"])
        assert ref_id is None or (pid, ref_id) not in self.refs, "a ref_id was debited twice"
        if ref_id is not None:
            self.refs[(pid, ref_id)] = made["id"]
        assert made["status"] == "PENDING"
        assert Decimal(made["total"]) == Decimal(made["amount"]) + Decimal(made["fee"])
        assert Decimal(made["amount"]) > 0
        self.model[(pid, paid_from)] -= Decimal(made["total"])
        due = self.now + timedelta(seconds=float(DEFAULT_CONFIRMATION_SECONDS[network]))
        self.withdrawals[made["id"]] = dict(made, fail=fail, due=due, settled=False)

    def internal(
        self, src: int, offset: int, route: tuple[str, str, Decimal], n: int, ref_id: str | None
    ) -> None:
        asset, _, unit = route
        sender, recipient = self.profiles[src], self.profiles[(src + offset) % PROFILES]
        amount = n * unit
        cmd = CreateInternalTransfer(
            actor=self.actor,
            from_profile_id=sender,
            to_profile_id=recipient,
            asset=asset,
            amount=str(amount),
            ref_id=ref_id,
        )
        try:
            made = self.run(cmd)
        except AlreadyExists:
            assert ref_id is not None and (sender, ref_id) in self.refs
            return
        except InsufficientFunds:
            assert self.model[(sender, asset)] < amount
            return
        except Invalid:
            assert offset == 0
            return
        assert ref_id is None or (sender, ref_id) not in self.refs, "a ref_id was debited twice"
        if ref_id is not None:
            self.refs[(sender, ref_id)] = made["id"]
        self.model[(sender, asset)] -= amount
        self.model[(recipient, asset)] += amount

    def advance(self, seconds: float) -> None:
        """Move the clock; each withdrawal due by now has its verdict, the others wait."""
        self.now += timedelta(seconds=seconds)
        self.run(AdvanceClock(actor=self.actor, to=self.now))
        state = self.engine.state
        for tid, made in self.withdrawals.items():
            t = state.transfers[tid]
            if made["settled"] or made["due"] > self.now:
                assert t["status"] == ("PENDING" if not made["settled"] else t["status"])
                continue
            made["settled"] = True
            assert t["status"] == ("FAILED" if made["fail"] else "COMPLETED")
            assert t["updated_at"] == format_time(made["due"])
            if made["fail"]:
                self.model[(t["profile_id"], t["balance_asset"])] += Decimal(t["total"])
            else:
                assert t["crypto_tx_hash"]
                self.fees_due[t["asset"]] += Decimal(t["fee"])

    # -- the end ---------------------------------------------------------------------

    def settle(self) -> None:
        """Let every withdrawal reach the network's verdict; check each accounts exactly."""
        self.advance(120)
        state = self.engine.state
        assert all(made["settled"] for made in self.withdrawals.values())
        self.check_model()
        for pid in self.profiles:
            for asset in ("BTC", "ETH", "USDC", "USD"):
                assert state.ledger.balance(withdrawing(pid), asset) == 0
        for asset, due in self.fees_due.items():
            assert state.ledger.balance(FEES, asset) == due
        assert state.ledger.check() == []
        for asset in ("BTC", "ETH", "USDC"):
            held = sum(
                (
                    state.ledger.balance(acct, a)
                    for (acct, a) in state.ledger.balances
                    if a == asset
                ),
                Decimal(0),
            )
            assert held == 0, f"postings of {asset} do not sum to zero"
        assert state.ledger.balance(WORLD, "BTC") <= 0

    def close(self) -> None:
        self.engine.stop()


@contextmanager
def _state_dir(folder: str) -> Iterator[None]:
    """A server database's key file in `folder` (not ~/.sandex) for one example."""
    before = os.environ.get(STATE_DIR_ENV)
    os.environ[STATE_DIR_ENV] = folder
    try:
        yield
    finally:
        if before is None:
            del os.environ[STATE_DIR_ENV]
        else:
            os.environ[STATE_DIR_ENV] = before


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    # `backend` and `request` only name the store: nothing of them is reset per example.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps)
def test_random_transfer_sequences_keep_the_books_exact(
    backend: str, request: pytest.FixtureRequest, plan: list[tuple[Any, ...]]
) -> None:
    server = request.getfixturevalue("postgres_server") if backend == "postgresql" else None
    with tempfile.TemporaryDirectory() as tmp, _state_dir(tmp):
        db: Path | str = Path(tmp) / "inv.db" if server is None else server.create("inv")
        run = Run(db)
        try:
            for step in plan:
                kind, *args = step
                try:
                    getattr(run, kind)(*args)
                except DomainError as exc:  # any refusal the step did not foresee is a bug
                    raise AssertionError(f"{kind} refused unexpectedly: {exc.detail}") from exc
                run.check_model()
            run.settle()
        finally:
            run.close()
        try:
            assert verify(str(db)) == []
        finally:
            if server is not None:
                server.drop(str(db))
