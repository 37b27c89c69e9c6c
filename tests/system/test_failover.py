"""One writer per PostgreSQL database, a standby that takes over, and fencing: a second
`sandex serve` waits as the standby (503, `role: standby`), takes over when the writer
stops, is killed or hangs past its lease, and a writer that lost the lease never
commits again (docs/operations.md, "A standby and failover").

Real processes on a real server (tests/support/postgres_server.py), loopback only."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import pytest

from sandex.engine.kernel.events import Event
from sandex.engine.store import LeaseHeld, StoreUnavailable
from sandex.engine.store.lease import Fenced
from tests.support.failover_helpers import Load, Node, events_of, logged_text, token, verify


def _event(position: int) -> Event:
    return Event(
        "Noted", f"s-{position}", {"n": position}, position, 1, "2024-01-01T00:00:00Z", {}, 1
    )


def _take_over(url: str) -> object:
    from sandex.engine.store.postgres import PostgresEventStore

    deadline = time.monotonic() + 10
    while True:
        try:
            return PostgresEventStore(url, lease=True, lease_seconds=1)
        except LeaseHeld:
            assert time.monotonic() < deadline, "the lease was never freed"
            time.sleep(0.05)


def test_a_store_that_lost_its_lease_never_commits_again(
    postgres_url: str, postgres_server: object
) -> None:
    """The lease's session ends (as a hung writer's does, by idle_session_timeout); the
    next writer bumps the epoch; the first one's append, though its position follows the
    log's end, is refused, and its `fenced` is set."""
    import psycopg

    from sandex.engine.store.postgres import WRITER_LOCK, PostgresEventStore

    first = PostgresEventStore(postgres_url, lease=True, lease_seconds=1)
    second = None
    try:
        first.commit([_event(1)], {}, 0)
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'"
                " AND objid = %s AND granted",
                (WRITER_LOCK,),
            )
        second = _take_over(postgres_url)
        second.commit([_event(2)], {}, 0)  # type: ignore[attr-defined]
        with pytest.raises(Fenced, match="another sandex writer took over"):
            first.commit([_event(3)], {}, 0)
        assert first.fenced.wait(5)
        assert [e.position for e in second.read()] == [1, 2]  # type: ignore[attr-defined]
        second.commit([_event(3)], {}, 0)  # type: ignore[attr-defined]
    finally:
        first.close()
        if second is not None:
            second.close()  # type: ignore[attr-defined]


def test_a_fenced_store_error_is_a_store_unavailable() -> None:
    assert issubclass(Fenced, StoreUnavailable)


def test_a_second_server_waits_as_standby_and_takes_over_when_the_writer_stops(
    postgres_url: str, tmp_path: Path
) -> None:
    writer = Node(postgres_url, tmp_path / "a.log")
    standby = None
    try:
        assert writer.role() == "writer"
        standby = Node(postgres_url, tmp_path / "b.log")
        health = httpx.get(f"{standby.base}/healthz")
        assert health.status_code == 503
        assert health.headers["content-type"].startswith("application/problem+json")
        assert health.json()["meta"]["role"] == "standby"
        orders = httpx.get(f"{standby.base}/v2/profiles/default/orders")
        assert orders.status_code == 503 and "standby" in orders.json()["detail"]
        assert httpx.get(f"{writer.base}/healthz").json()["role"] == "writer"
        headers = token(writer.base)
        r = httpx.post(
            f"{writer.base}/v2/sandbox/profiles/default/deposit",
            json={"asset": "USD", "amount": "5"},
            headers=headers,
        )
        assert r.status_code == 200, r.text
        assert writer.end() == 0
        standby.wait_role("writer")
        balance = httpx.get(
            f"{standby.base}/v2/profiles/default/balances/USD", headers=token(standby.base)
        )
        assert balance.status_code == 200 and balance.json()["available"] == "5"
    finally:
        writer.end()
        if standby is not None:
            assert standby.end() == 0


@pytest.mark.slow  # two servers under load and a kill: about 15 s
def test_the_standby_serves_within_5_s_of_a_sigkill_and_no_acknowledged_write_is_lost(
    postgres_url: str, tmp_path: Path
) -> None:
    writer = Node(postgres_url, tmp_path / "a.log")
    standby = Node(postgres_url, tmp_path / "b.log")
    load = Load([writer.base, standby.base]).start()
    try:
        time.sleep(2)
        killed = time.monotonic()
        writer.signal(signal.SIGKILL)
        writer.proc.wait(timeout=10)
        while load.first_after(killed, standby.base) is None and time.monotonic() < killed + 15:
            time.sleep(0.02)
        time.sleep(1)
    finally:
        load.finish()
        standby_code = standby.end()
        writer.end()
    took = load.first_after(killed, standby.base)
    print(f"failover: first acknowledged write on the standby {took:.2f} s after SIGKILL")
    assert took is not None and took < 5, standby.output()
    assert standby_code == 0
    before = [a for a in load.acknowledged if a[1] == writer.base]
    assert before, "the writer acknowledged nothing before its kill"
    text = logged_text(postgres_url)
    lost = [a for a in load.acknowledged if a[2] not in text]
    assert not lost, f"{len(lost)} of {len(load.acknowledged)} acknowledged writes lost"
    done = verify(postgres_url)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow  # a writer paused past its 2 s lease: about 12 s
def test_a_writer_paused_past_its_lease_never_commits_again_and_exits(
    postgres_url: str, tmp_path: Path
) -> None:
    writer = Node(postgres_url, tmp_path / "a.log", lease_seconds=2)
    standby = Node(postgres_url, tmp_path / "b.log", lease_seconds=2)
    try:
        old = token(writer.base)
        r = httpx.post(
            f"{writer.base}/v2/sandbox/profiles/default/deposit",
            json={"asset": "USD", "amount": "1"},
            headers=old,
        )
        assert r.status_code == 200, r.text
        writer.signal(signal.SIGSTOP)
        took = standby.wait_role("writer", seconds=15)
        assert took >= 1.5  # not before the lease ended
        new = token(standby.base)
        r = httpx.post(
            f"{standby.base}/v2/sandbox/profiles/default/deposit",
            json={"asset": "USD", "amount": "2"},
            headers=new,
        )
        assert r.status_code == 200, r.text
        taken_at = events_of(postgres_url)[-1].position
        writer.signal(signal.SIGCONT)
        try:
            late = httpx.post(
                f"{writer.base}/v2/sandbox/profiles/default/deposit",
                json={"asset": "USD", "amount": "77.77"},
                headers=old,
                timeout=10,
            )
            assert late.status_code >= 500, late.text
        except httpx.TransportError:
            pass  # already gone: as good
        code = writer.proc.wait(timeout=20)
        assert code == 4, writer.output()
        assert "another sandex took over" in writer.output()
        assert "77.77" not in logged_text(postgres_url)
        after = [e for e in events_of(postgres_url) if e.position > taken_at]
        assert after == []
        assert standby.role() == "writer"
    finally:
        writer.end()
        assert standby.end() == 0
    done = verify(postgres_url)
    assert done.returncode == 0, done.stdout + done.stderr
