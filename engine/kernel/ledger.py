"""The double-entry book: balances per (account, asset), changed only by postings.

Every movement of value is a posting `(from_account, to_account, asset, amount)`, so
each posting sums to zero per asset by construction. An owned account is named
`<owner>:<purpose>` (with a colon) and never goes below zero; an account without a
colon is external and may (the outside world, say). Which accounts exist and who owns
them is the domain's (engine/domain/ledger.py); the writer's State holds one book.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from decimal import Decimal, localcontext

from sandex.engine.kernel.money import CONTEXT, ZERO

Posting = tuple[str, str, str, Decimal]


def is_owned_account(account: str) -> bool:
    """An owned account never goes below zero."""
    return ":" in account


class LedgerViolation(AssertionError):
    """An invariant of the ledger broke: a bug, never a user error."""


class Ledger:
    __slots__ = ("balances", "_totals")

    def __init__(self) -> None:
        self.balances: dict[tuple[str, str], Decimal] = {}
        self._totals: dict[str, Decimal] = defaultdict(Decimal)

    def balance(self, account: str, asset: str) -> Decimal:
        return self.balances.get((account, asset), ZERO)

    def post(self, postings: Sequence[Posting]) -> set[tuple[str, str]]:
        """Apply postings all or nothing; answer the (account, asset) pairs that changed."""
        balances = self.balances
        if len(postings) == 1:  # the common case needs no overlay to be all-or-nothing
            return self._post_one(*postings[0])
        changed: dict[tuple[str, str], Decimal] = {}
        for source, target, asset, amount in postings:
            if amount <= ZERO:
                raise LedgerViolation(f"posting of non-positive amount {amount} {asset}")
            key_s = (source, asset)
            key_t = (target, asset)
            new_source = changed.get(key_s, balances.get(key_s, ZERO)) - amount
            if new_source < ZERO and is_owned_account(source):
                raise LedgerViolation(f"account {source} would go negative in {asset}")
            changed[key_s] = new_source
            changed[key_t] = changed.get(key_t, balances.get(key_t, ZERO)) + amount
        balances.update(changed)
        return set(changed)

    def post_encoded(
        self, raw: Sequence[list[str]], amounts: dict[str, Decimal]
    ) -> set[tuple[str, str]]:
        """`post` of an event's postings as recorded (amounts as text): one posting, the
        common case, is applied without building the decoded list. `amounts` is the
        state's cache of amount texts (`decode_postings`)."""
        if len(raw) != 1:
            return self.post(decode_postings(raw, amounts))
        ((source, target, asset, text),) = raw
        return self._post_one(source, target, asset, amounts.get(text) or _amount(amounts, text))

    def apply_encoded(
        self, raws: Iterable[Sequence[list[str]]], amounts: dict[str, Decimal]
    ) -> None:
        """`post_encoded` of many events' postings, in order, answering nothing: a replay.
        A run of single postings between the same two accounts keeps both balances in
        hand instead of looking them up for each (the same sums, in the same order)."""
        balances = self.balances
        held: tuple[str, str, str] | None = None  # (source, target, asset) in hand
        key_s = key_t = ("", "")
        source_balance = target_balance = amount = ZERO
        checked = False  # the source held is a profile account: never below zero
        last_text = None
        for raw in raws:
            if len(raw) != 1:
                if held is not None:
                    balances[key_s] = source_balance
                    balances[key_t] = target_balance
                    held = None
                self.post(decode_postings(raw, amounts))
                continue
            ((source, target, asset, text),) = raw
            if text != last_text:
                amount = amounts.get(text) or _amount(amounts, text)
                if amount <= ZERO:
                    raise LedgerViolation(f"posting of non-positive amount {amount} {asset}")
                last_text = text
            if held is None or source != held[0] or target != held[1] or asset != held[2]:
                if held is not None:
                    balances[key_s] = source_balance
                    balances[key_t] = target_balance
                    held = None
                if source == target:
                    self._post_one(source, target, asset, amount)
                    continue
                key_s = (source, asset)
                key_t = (target, asset)
                source_balance = balances.get(key_s, ZERO)
                target_balance = balances.get(key_t, ZERO)
                checked = is_owned_account(source)
                held = (source, target, asset)
            source_balance -= amount
            if checked and source_balance < ZERO:
                raise LedgerViolation(f"account {source} would go negative in {asset}")
            target_balance += amount
        if held is not None:
            balances[key_s] = source_balance
            balances[key_t] = target_balance

    def _post_one(
        self, source: str, target: str, asset: str, amount: Decimal
    ) -> set[tuple[str, str]]:
        if amount <= ZERO:
            raise LedgerViolation(f"posting of non-positive amount {amount} {asset}")
        balances = self.balances
        key_s = (source, asset)
        key_t = (target, asset)
        new_source = balances.get(key_s, ZERO) - amount
        if new_source < ZERO and ":" in source:
            raise LedgerViolation(f"account {source} would go negative in {asset}")
        balances[key_s] = new_source
        balances[key_t] = balances.get(key_t, ZERO) + amount
        return {key_s, key_t}

    def check(self) -> list[str]:
        """Every broken invariant, as text; empty when the ledger is sound."""
        problems: list[str] = []
        sums: dict[str, Decimal] = defaultdict(Decimal)
        with localcontext(CONTEXT):
            for (account, asset), value in self.balances.items():
                sums[asset] += value
                if value < ZERO and is_owned_account(account):
                    problems.append(f"negative balance: {account} {asset} {value}")
        for asset, total in sorted(sums.items()):
            if total != ZERO:
                problems.append(f"postings of {asset} sum to {total}, not zero")
        return problems


def encode_postings(postings: Iterable[Posting]) -> list[list[str]]:
    return [[s, t, a, format(v, "f")] for s, t, a, v in postings]


def _amount(amounts: dict[str, Decimal], text: str) -> Decimal:
    """Parse `text` and remember it in `amounts`, which is bounded by being emptied when
    full."""
    if len(amounts) >= 4096:
        amounts.clear()
    amount = amounts[text] = Decimal(text)
    return amount


def decode_postings(raw: Iterable[list[str]], amounts: dict[str, Decimal]) -> list[Posting]:
    """Postings as recorded, decoded. `amounts` maps amount texts to their Decimal (the
    state's cache, `kernel.state`): sandboxes move the same few amounts again and again,
    and a dict lookup is a fifth of parsing a Decimal; Decimals are immutable, so sharing
    one is safe."""
    return [(s, t, a, amounts.get(v) or _amount(amounts, v)) for s, t, a, v in raw]
