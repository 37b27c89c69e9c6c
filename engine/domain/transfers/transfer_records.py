"""Transfer records: every movement of funds in or out of a profile.

Deposits, withdrawals and internal transfers all create a transfer through these
events, so that the transfer list, the ledger and the event feed agree:
`TransferCreated` (the whole record and its postings), then `TransferCompleted` or
`TransferFailed` (changes and postings)."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

import orjson

from sandex.engine.domain.balances import SHOWN
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.ledger import Posting, encode_postings
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

# The API's vocabularies of transfers, declared here once (the adapter derives its
# enums). The types are the interface's list (it adds PLATFORM_TRANSFER_* and
# RTP_DEPOSIT to the OpenAPI document's).
TRANSFER_TYPE_NAMES = (
    "INTERNAL_TRANSFER_DEBIT",
    "INTERNAL_TRANSFER_CREDIT",
    "CRYPTO_DEPOSIT",
    "CRYPTO_WITHDRAWAL",
    "WIRE_DEPOSIT",
    "WIRE_WITHDRAWAL",
    "SEN_DEPOSIT",
    "SEN_WITHDRAWAL",
    "BANK_DEPOSIT",
    "BANK_WITHDRAWAL",
    "PLATFORM_TRANSFER_DEBIT",
    "PLATFORM_TRANSFER_CREDIT",
    "SIGNET_DEPOSIT",
    "SIGNET_WITHDRAWAL",
    "CBIT_WITHDRAWAL",
    "CBIT_DEPOSIT",
    "CUBIX_DEPOSIT",
    "CUBIX_WITHDRAWAL",
    "RTP_DEPOSIT",
)
TRANSFER_STATUSES = ("PENDING", "COMPLETED", "FAILED")
DIRECTIONS = ("CREDIT", "DEBIT")
# Statuses a transfer never leaves.
SETTLED = TRANSFER_STATUSES[1:]
# Transfers that hold their total in the profile's withdrawal hold while PENDING: crypto
# withdrawals and fiat ones (fiat_withdrawals.TRANSFER_TYPES).
HELD_TYPES = frozenset(
    {"CRYPTO_WITHDRAWAL", "WIRE_WITHDRAWAL", "CUBIX_WITHDRAWAL", "CBIT_WITHDRAWAL"}
)

_STREAM = itemgetter(1)  # a scanned row's stream


def transfer_view(transfer: dict[str, Any]) -> dict[str, Any]:
    """The public object: the record without its nulls and its internal `seq` (its log
    position), its other fields in the record's order. Built five times per withdrawal
    (reply, rows, feed): a C-level copy whose few nulls are then deleted costs 40% less
    than a comprehension that filters every field in Python."""
    view = transfer.copy()
    for name, value in transfer.items():
        if value is None:
            del view[name]
    view.pop("seq", None)
    return view


def create(ctx: Ctx, record: dict[str, Any], postings: list[Posting]) -> dict[str, Any]:
    """Emit a new transfer; `record` holds its public fields but times and id."""
    record = dict(record)
    record.setdefault("id", ctx.ids.uuid())
    record["created_at"] = ctx.now_text
    record["updated_at"] = ctx.now_text
    ctx.emit(
        "TransferCreated",
        f"transfer-{record['id']}",
        {"transfer": record, "postings": encode_postings(postings)},
    )
    return ctx.state.transfers[record["id"]]


def complete(ctx: Ctx, transfer_id: str, changes: dict[str, Any], postings: list[Posting]) -> None:
    ctx.emit(
        "TransferCompleted",
        f"transfer-{transfer_id}",
        {
            "transfer_id": transfer_id,
            "changes": {**changes, "status": "COMPLETED"},
            "postings": encode_postings(postings),
        },
    )


def fail(ctx: Ctx, transfer_id: str, changes: dict[str, Any], postings: list[Posting]) -> None:
    ctx.emit(
        "TransferFailed",
        f"transfer-{transfer_id}",
        {
            "transfer_id": transfer_id,
            "changes": {**changes, "status": "FAILED"},
            "postings": encode_postings(postings),
        },
    )


def post(state: State, raw_postings: list[list[str]]) -> None:
    """Apply an event's postings to the ledger and mark the balance rows that show an
    account they touched: a withdrawal's confirmation, which empties its hold into the
    world, leaves the profile's row as it was, and is not written again."""
    if not raw_postings:
        return
    touched = state.ledger.post_encoded(raw_postings, state.caches.amounts)
    if state.live:
        dirty = state.dirty  # `State.mark` written out: every order and trade posts,
        for account, asset in touched:  # on two accounts or more
            if account.endswith(SHOWN):
                dirty.add(("balance", (account.split(":", 1)[0], asset)))


def _created(state: State, e: Event) -> None:
    data = e.data
    live = state.live
    record = dict(data["transfer"]) if live else data["transfer"]
    record["seq"] = e.position
    tid = record["id"]
    state.transfers[tid] = record
    ref_id = record.get("ref_id")
    if ref_id:
        state.transfer_refs[(record["profile_id"], ref_id)] = tid
    post(state, data["postings"])
    if live:
        state.mark("transfer", tid)


def _created_run(
    state: State, versions: dict[str, int], rows: list[tuple[Any, ...]], i: int
) -> int:
    """`_created` for a run of rows in a state-only replay (domain.REPLAYERS): nothing is
    marked, a decoded record is the state's own, and one settled from its creation (a
    deposit) is kept as its event's text (engine/kernel/compact_records.py). Settled records and the
    run's stream versions (each 1: a creation) go into their dicts in one C-level update
    each, in row order: a Python-level store per row was a fifth of the replay."""
    transfers = state.transfers
    refs = state.transfer_refs
    postings: list[list[list[str]]] = []  # applied after the run: nothing reads between
    settled: list[tuple[str, tuple[str, str, int]]] = []  # stored before any later entry
    loads = orjson.loads
    start = i
    n = len(rows)
    mine = rows[i][3]  # this replayer's index in the scan's `first`
    while i < n:
        position, _, text, brief = rows[i]
        if brief != mine:
            break
        data = loads(text)
        record = data["transfer"]
        tid = record["id"]
        ref_id = record.get("ref_id")
        if ref_id:
            refs[(record["profile_id"], ref_id)] = tid
        if record.get("status") in SETTLED:
            settled.append((tid, (text, "transfer", position)))
        else:
            if settled:
                transfers.add_encoded(settled)
                settled = []
            record["seq"] = position
            transfers[tid] = record
        raw = data["postings"]
        if raw:
            postings.append(raw)
        i += 1
    transfers.add_encoded(settled)
    versions.update(dict.fromkeys(map(_STREAM, rows[start:i]), 1))
    state.ledger.apply_encoded(postings, state.caches.amounts)
    return i


def _changed(state: State, e: Event) -> None:
    record = state.transfers[e.data["transfer_id"]]
    record.update(e.data["changes"])
    record["updated_at"] = e.occurred_at
    post(state, e.data["postings"])
    state.mark("transfer", record["id"])


APPLIERS = {
    "TransferCreated": _created,
    "TransferCompleted": _changed,
    "TransferFailed": _changed,
}

REPLAYERS = {"TransferCreated": _created_run}


def _row(state: State, key: str) -> dict[str, Any] | None:
    t = state.transfers.get(key)
    if t is None:
        return None
    return {
        "id": t["id"],
        "customer_id": t["customer_id"],
        "profile_id": t["profile_id"],
        "ref_id": t.get("ref_id"),
        "type": t["type"],
        "status": t["status"],
        "group_id": t.get("group_id"),
        "crypto_tx_hash": t.get("crypto_tx_hash"),
        "created_at": t["created_at"],
        "updated_at": t["updated_at"],
        "seq": t["seq"],
        "body": orjson.dumps(transfer_view(t)).decode(),
    }


TABLE = ReadModelTable(
    "transfers",
    {
        "id": str,
        "customer_id": str,
        "profile_id": str,
        "ref_id": str,
        "type": str,
        "status": str,
        "group_id": str,
        "crypto_tx_hash": str,
        "created_at": str,
        "updated_at": str,
        "seq": int,
        "body": str,
    },
    pk=("id",),
    kind="transfer",
    row=_row,
    key_columns=("id",),
    keys=lambda s: s.transfers.keys(),
)
REGISTRATION = Registration(appliers=APPLIERS, replayers=REPLAYERS, tables=(TABLE,))
