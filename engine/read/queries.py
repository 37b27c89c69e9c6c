"""The read side: queries over the committed read-model tables, on read-only connections.

A caller only ever sees its own customer's rows: every query takes the customer id and
a row of another customer is answered as absent."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import orjson

from sandex.engine.kernel.clock import EPOCH, format_time, parse_time
from sandex.engine.kernel.errors import Invalid, NotFound
from sandex.engine.kernel.execution_ids import META_KEY, ExecutionIds, database_key
from sandex.engine.kernel.money import ASSETS
from sandex.engine.read.connections import ReadConnections
from sandex.engine.read.cursors import Cursors
from sandex.engine.read.params import parse_int
from sandex.engine.store import StoreUnavailable

MAX_LIMIT = 1000
DEFAULT_LIMIT = 100
_TIME_OPS = {"lt": "<", "lte": "<=", "eq": "=", "gte": ">=", "gt": ">"}


@dataclass
class Page:
    """Paging and filtering as the API takes them: cursor, limit, order, time ranges."""

    limit: int | None = None
    page_cursor: str | None = None
    order: str | None = None
    # CREATED_AT (None: the same) or UPDATED_AT, where the list has both
    order_by: str | None = None
    # ("created_at", "gte") -> RFC 3339 text
    times: dict[tuple[str, str], str] = field(default_factory=dict)


def time_conditions(
    times: dict[tuple[str, str], str], table: str = ""
) -> tuple[list[str], list[Any]]:
    """SQL conditions for time filters such as `created_at.gte`; a bad time names its field."""
    where: list[str] = []
    params: list[Any] = []
    for (column, op), text in times.items():
        try:
            value = format_time(parse_time(text))
        except ValueError as exc:
            raise Invalid(
                f"{column}.{op} invalid: not an RFC 3339 time", field=f"{column}.{op}"
            ) from exc
        where.append(f"{table}{column} {_TIME_OPS[op]} ?")
        params.append(value)
    return where, params


def checked_limit(limit: int | None, default: int = DEFAULT_LIMIT, most: int = MAX_LIMIT) -> int:
    """A page size as asked, or `default`; one out of 1..`most` is refused in the words
    the HTTP layer uses for the same fault."""
    if limit is None:
        return default
    if limit < 1:
        raise Invalid("limit invalid: must be at least 1", field="limit")
    if limit > most:
        raise Invalid(f"limit invalid: must be at most {most}", field="limit")
    return limit


class Queries(ReadConnections):
    """The API's resources as their customer reads them: profiles, balances, transfers,
    fiat deposit instructions, orders and executions, one page at a time."""

    def __init__(self, db_path: str, *, cursors: Cursors | None = None) -> None:
        """`cursors`: what seals paging cursors (the API's, keyed from its sealing key);
        None: a key of this object's own, so its cursors do not outlive it."""
        super().__init__(db_path)
        self.cursors = cursors if cursors is not None else Cursors()
        self._execution_ids: ExecutionIds | None = None

    def _one(self, sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
        return self.conn.execute(sql, params).fetchone()

    @property
    def execution_ids(self) -> ExecutionIds:
        """The database's execution id permutation (engine/kernel/execution_ids.py), whose key
        the engine stored when it opened the database."""
        if self._execution_ids is None:
            row = self._one("SELECT value FROM sandex_meta WHERE key = ?", (META_KEY,))
            if row is None:
                raise RuntimeError("the database has no execution id key: open it with the engine")
            self._execution_ids = database_key(row[0])
        return self._execution_ids

    # -- paging ---------------------------------------------------------------------

    def page(
        self,
        table: str,
        where: list[str],
        params: list[Any],
        page: Page,
        *,
        owner: str,
        default_order: str = "DESC",
    ) -> dict[str, Any]:
        """One page of `table`'s rows of customer `owner` that match `where`, by creation
        (seq) or, with `order_by` UPDATED_AT, by `updated_at` then seq; `default_order`
        where the request names no order. Its cursor is bound to that table, customer
        and order_by."""
        limit = checked_limit(page.limit)
        order = (page.order or default_order).upper()
        if order not in ("ASC", "DESC"):
            raise Invalid("order invalid: must be one of ASC, DESC", field="order")
        by_update = page.order_by == "UPDATED_AT"
        where = list(where)
        params = list(params)
        time_where, time_params = time_conditions(page.times)
        where += time_where
        params += time_params
        after = ">" if order == "ASC" else "<"
        if page.page_cursor and by_update:
            micros, seq = self.cursors.decode_pair(page.page_cursor, table, owner, "updated_at")
            where.append(f"(updated_at, seq) {after} (?, ?)")
            params += [format_time(EPOCH + timedelta(microseconds=micros)), seq]
        elif page.page_cursor:
            where.append(f"seq {after} ?")
            params.append(self.cursors.decode(page.page_cursor, table, owner))
        sql = f"SELECT seq, body{', updated_at' if by_update else ''} FROM {table}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += (
            f" ORDER BY updated_at {order}, seq {order}" if by_update else f" ORDER BY seq {order}"
        )
        rows = self.conn.execute(sql + " LIMIT ?", [*params, limit + 1]).fetchall()
        items = [orjson.loads(row[1]) for row in rows[:limit]]
        result: dict[str, Any] = {"items": items}
        if len(rows) > limit:
            last = rows[limit - 1]
            if by_update:
                micros = (parse_time(last[2]) - EPOCH) // timedelta(microseconds=1)
                cursor = self.cursors.encode_pair(micros, last[0], table, owner, "updated_at")
            else:
                cursor = self.cursors.encode(last[0], table, owner)
            result["next_page_cursor"] = cursor
        return result

    # -- the log and profiles -------------------------------------------------------

    def log_position(self) -> int | None:
        """The last position of the log as this connection reads it; None when the store
        cannot be read (a health check reports it, it does not fail on it)."""
        try:
            row = self.conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()
        except (sqlite3.Error, StoreUnavailable):
            return None
        return int(row[0]) if row else 0

    def profile_row(self, customer_id: str, profile_id: str) -> tuple[str, dict[str, Any]]:
        if profile_id == "default":
            row = self._one(
                "SELECT id, body FROM profiles WHERE customer_id = ? AND type = 'DEFAULT'",
                (customer_id,),
            )
        else:
            row = self._one(
                "SELECT id, body FROM profiles WHERE customer_id = ? AND id = ?",
                (customer_id, profile_id),
            )
        if row is None:
            raise NotFound(f"profile not found with id {profile_id}")
        return row[0], orjson.loads(row[1])

    def profile(
        self, customer_id: str, profile_id: str, include_deactivated: bool = False
    ) -> dict[str, Any]:
        """A deactivated profile is 'not found' unless the caller asks for those too."""
        pid, body = self.profile_row(customer_id, profile_id)
        if not include_deactivated and self._deactivated(pid):
            raise NotFound(f"profile not found with id {profile_id}")
        return body

    def _deactivated(self, profile_id: str) -> bool:
        row = self._one("SELECT 1 FROM deactivated_profiles WHERE profile_id = ?", (profile_id,))
        return row is not None

    def list_profiles(
        self,
        customer_id: str,
        page: Page,
        nickname: str | None = None,
        ids: list[str] | None = None,
        include_deactivated: bool = False,
    ) -> dict[str, Any]:
        """Profiles oldest first unless `order` says otherwise (the reference's default);
        deactivated ones only when asked for."""
        where = ["customer_id = ?"]
        params: list[Any] = [customer_id]
        if not include_deactivated:
            where.append("id NOT IN (SELECT profile_id FROM deactivated_profiles)")
        if nickname is not None:
            # The reference: prefix matching, case insensitive, no wildcards. Folded here
            # rather than with SQL's lower(), which SQLite applies to ASCII only.
            prefix = nickname.casefold()
            named = [
                pid
                for pid, name in self.conn.execute(
                    "SELECT id, nickname FROM profiles WHERE customer_id = ?", (customer_id,)
                )
                if name.casefold().startswith(prefix)
            ]
            where.append(f"id IN ({', '.join('?' for _ in named)})" if named else "0 = 1")
            params.extend(named)
        if ids:
            where.append(f"id IN ({', '.join('?' for _ in ids)})")
            params.extend(ids)
        return self.page("profiles", where, params, page, owner=customer_id, default_order="ASC")

    def balances(self, customer_id: str, profile_id: str) -> dict[str, Any]:
        pid, _ = self.profile_row(customer_id, profile_id)
        rows = {
            r[0]: (r[1], r[2])
            for r in self.conn.execute(
                "SELECT asset, available, trading FROM balances WHERE profile_id = ?", (pid,)
            )
        }
        items = []
        for asset in ASSETS:
            avail, trade = rows.get(asset, ("0", "0"))
            items.append({"asset": asset, "available": avail, "trading": trade})
        return {"items": items}

    def balance(self, customer_id: str, profile_id: str, asset: str) -> dict[str, Any]:
        pid, _ = self.profile_row(customer_id, profile_id)
        if asset not in ASSETS:
            raise NotFound(f"asset not found: {asset}")
        row = self._one(
            "SELECT available, trading FROM balances WHERE profile_id = ? AND asset = ?",
            (pid, asset),
        )
        avail, trade = row if row else ("0", "0")
        return {"asset": asset, "available": avail, "trading": trade}

    # -- transfers and fiat instructions ---------------------------------------------

    def transfer(self, customer_id: str, transfer_id: str) -> dict[str, Any]:
        row = self._one(
            "SELECT body FROM transfers WHERE id = ? AND customer_id = ?",
            (transfer_id, customer_id),
        )
        if row is None:
            raise NotFound(f"transfer not found with id {transfer_id}")
        return orjson.loads(row[0])  # type: ignore[no-any-return]

    def list_transfers(
        self, customer_id: str, page: Page, filters: dict[str, list[str]]
    ) -> dict[str, Any]:
        """Transfers newest first by creation, or, with `order_by` UPDATED_AT, oldest
        change first (the reference's defaults; "what changed since" reconciliation).
        With both an order_by and a time filter, the reference requires them to agree."""
        if page.order_by is not None:
            column = page.order_by.lower()
            other = sorted(f"{c}.{op}" for c, op in page.times if c != column)
            if other:
                raise Invalid(
                    f"order_by invalid: {page.order_by} with a {other[0]} filter; order_by"
                    " must equal the type of the timestamp filter",
                    field="order_by",
                )
        where = ["customer_id = ?"]
        params: list[Any] = [customer_id]
        columns = {
            "profile_ids": "profile_id",
            "ref_ids": "ref_id",
            "ids": "id",
            "type": "type",
            "statuses": "status",
            # a crypto deposit held for (or rejected by) the travel rule
            "secondary_statuses": "json_extract(body, '$.secondary_status.name')",
            "group_ids": "group_id",
            "identity_ids": "json_extract(body, '$.identity_id')",
            "account_ids": "json_extract(body, '$.account_id')",
            "crypto_tx_hashes": "crypto_tx_hash",
        }
        for name, values in filters.items():
            if values:
                column = columns[name]
                where.append(f"{column} IN ({', '.join('?' for _ in values)})")
                params.extend(values)
        default_order = "ASC" if page.order_by == "UPDATED_AT" else "DESC"
        return self.page(
            "transfers", where, params, page, owner=customer_id, default_order=default_order
        )

    def fiat_instructions(self, customer_id: str, instructions_id: str) -> dict[str, Any]:
        row = self._one(
            "SELECT body FROM fiat_instructions WHERE id = ? AND customer_id = ?",
            (instructions_id, customer_id),
        )
        if row is None:
            raise NotFound(f"fiat deposit instructions not found with id {instructions_id}")
        return orjson.loads(row[0])  # type: ignore[no-any-return]

    def list_fiat_instructions(
        self, customer_id: str, page: Page, ids: list[str] | None, ref_ids: list[str] | None
    ) -> dict[str, Any]:
        where = ["customer_id = ?"]
        params: list[Any] = [customer_id]
        for column, values in (("id", ids), ("ref_id", ref_ids)):
            if values:
                where.append(f"{column} IN ({', '.join('?' for _ in values)})")
                params.extend(values)
        return self.page("fiat_instructions", where, params, page, owner=customer_id)

    # -- stablecoin conversions (engine/domain/transfers/stablecoin_conversions.py) ----

    def sandbox_pacing(self) -> dict[str, dict[str, str | None]]:
        """The kinds paced otherwise than by default (sandex.engine.domain.sandbox_pacing)."""
        rows = self.conn.execute("SELECT kind, mode, value FROM sandbox_pacing").fetchall()
        return {kind: {"mode": mode, "value": value} for kind, mode, value in rows}

    def sandbox_faults(self, owner: str | None = None) -> list[dict[str, Any]]:
        """The fault rules in the order they were armed (sandex.engine.domain.sandbox_faults):
        every rule of the world, or those of the tenant `owner`. Each view carries its
        `owner` ("" for the world's)."""
        sql = "SELECT owner, position, body FROM sandbox_faults"
        params: tuple[str, ...] = ()
        if owner is not None:
            sql += " WHERE owner = ?"
            params = (owner,)
        rows = self.conn.execute(sql + " ORDER BY position", params).fetchall()
        return [{**orjson.loads(body), "owner": who, "position": at} for who, at, body in rows]

    def sandbox_fault(self, rule_id: str, owner: str | None = None) -> dict[str, Any]:
        """One fault rule; NotFound when there is none, or it is another tenant's."""
        row = self._one("SELECT owner, position, body FROM sandbox_faults WHERE id = ?", (rule_id,))
        if row is None or (owner is not None and row[0] != owner):
            raise NotFound(f"fault rule not found with id {rule_id[:64]}")
        return {**orjson.loads(row[2]), "owner": row[0], "position": row[1]}

    def polls_awaited(self, customer_id: str, item_id: str) -> bool:
        """Whether the customer's item settles after a number of reads of it."""
        row = self._one(
            "SELECT left_polls FROM sandbox_polls WHERE item_id = ? AND customer_id = ?",
            (item_id, customer_id),
        )
        return row is not None

    def stablecoin_conversion(self, customer_id: str, conversion_id: str) -> dict[str, Any]:
        row = self._one(
            "SELECT body FROM stablecoin_conversions WHERE id = ? AND customer_id = ?",
            (conversion_id, customer_id),
        )
        if row is None:
            raise NotFound(
                f"conversion with id {conversion_id} not found for customer with id {customer_id}"
            )
        return orjson.loads(row[0])  # type: ignore[no-any-return]

    def list_stablecoin_conversions(
        self, customer_id: str, page: Page, profile_id: str | None, ref_id: str | None
    ) -> dict[str, Any]:
        """Newest first unless `order` says otherwise (the reference's default)."""
        where = ["customer_id = ?"]
        params: list[Any] = [customer_id]
        if profile_id is not None:
            where.append("profile_id = ?")
            params.append(self.profile_row(customer_id, profile_id)[0])
        if ref_id is not None:
            where.append("ref_id = ?")
            params.append(ref_id)
        return self.page("stablecoin_conversions", where, params, page, owner=customer_id)

    # -- quote executions (rows of engine/domain/quotes.py) ----------------------------

    def quote_execution(
        self, customer_id: str, profile_id: str, execution_id: str
    ) -> dict[str, Any]:
        pid, _ = self.profile_row(customer_id, profile_id)
        row = self._one(
            "SELECT body FROM quote_executions WHERE id = ? AND profile_id = ?",
            (execution_id, pid),
        )
        if row is None:
            raise NotFound(f"quote execution not found with id {execution_id}")
        return orjson.loads(row[0])  # type: ignore[no-any-return]

    def list_quote_executions(
        self,
        customer_id: str,
        profile_id: str,
        page: Page,
        side: str | None = None,
        market: str | None = None,
        status: str | None = None,
    ) -> dict[str, Any]:
        """A profile's quote executions, newest first; another customer's profile is 404."""
        pid = self.profile_row(customer_id, profile_id)[0]
        return self._filtered(
            "quote_executions",
            customer_id,
            page,
            {"profile_id": pid, "side": side, "market": market, "status": status},
            {},
        )

    # -- orders and executions (rows of engine/domain/trading/order_rows.py) ----------

    def list_withdrawal_fees(self, customer_id: str, page: Page) -> dict[str, Any]:
        """The customer's crypto withdrawal fee quotes, newest first, each with its expiry
        and status (the API answers each when made; the console lists them)."""
        return self.page(
            "withdrawal_fees", ["customer_id = ?"], [customer_id], page, owner=customer_id
        )

    def order(self, customer_id: str, profile_id: str, order_id: str) -> dict[str, Any]:
        pid, _ = self.profile_row(customer_id, profile_id)
        row = self._one("SELECT body FROM orders WHERE id = ? AND profile_id = ?", (order_id, pid))
        if row is None:
            raise NotFound(f"order not found with id {order_id}")
        return orjson.loads(row[0])  # type: ignore[no-any-return]

    def _filtered(
        self,
        table: str,
        customer_id: str,
        page: Page,
        equal: dict[str, str | None],
        within: dict[str, list[str] | None],
        after: tuple[str, int] | None = None,
    ) -> dict[str, Any]:
        where = ["customer_id = ?"]
        params: list[Any] = [customer_id]
        for column, value in equal.items():
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        for column, values in within.items():
            if values:
                where.append(f"{column} IN ({', '.join('?' for _ in values)})")
                params.extend(values)
        if after is not None:
            where.append(f"{after[0]} > ?")
            params.append(after[1])
        return self.page(table, where, params, page, owner=customer_id)

    def list_orders(
        self,
        customer_id: str,
        page: Page,
        profile_id: str | None = None,
        account_id: str | None = None,
        market: str | None = None,
        status: str | None = None,
        ref_ids: list[str] | None = None,
    ) -> dict[str, Any]:
        """Orders of the customer, newest first; a profile of another customer is 404."""
        pid = self.profile_row(customer_id, profile_id)[0] if profile_id is not None else None
        return self._filtered(
            "orders",
            customer_id,
            page,
            {"profile_id": pid, "account_id": account_id, "market": market, "status": status},
            {"ref_id": ref_ids},
        )

    def list_executions(
        self,
        customer_id: str,
        page: Page,
        profile_id: str | None = None,
        account_id: str | None = None,
        order_id: str | None = None,
        since_execution_id: str | None = None,
    ) -> dict[str, Any]:
        """Executions of the customer, newest first; `since_execution_id` keeps the ones
        after that id.

        Rows hold the engine's execution numbers (`seq`, and `execution_id` in the body);
        the API shows each through the database's permutation, and maps the id a client
        sends back to its number."""
        pid = self.profile_row(customer_id, profile_id)[0] if profile_id is not None else None
        ids = self.execution_ids
        after = None
        if since_execution_id is not None:
            # ids lie in 1..2**63-1 (`execution_ids.new_key`), parse_int's default range
            public = parse_int(since_execution_id, "since_execution_id")
            after = ("seq", ids.number(public))
        result = self._filtered(
            "executions",
            customer_id,
            page,
            {"profile_id": pid, "account_id": account_id, "order_id": order_id},
            {},
            after,
        )
        for item in result["items"]:
            item["execution_id"] = str(ids.public(int(item["execution_id"])))
        return result
