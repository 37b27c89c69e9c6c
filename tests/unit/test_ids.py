"""Seeded ids (engine/kernel/ids.py, issue 20): version-7 UUIDs ordered by engine time,
so that an index on ids grows at its end; reproducible from the seed; and showing a
tenant nothing of what others did between two of its ids but the time that passed."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sandex.engine.kernel.clock import to_millis
from sandex.engine.kernel.ids import IdSource

T0 = datetime(2024, 2, 1, 9, 0, tzinfo=UTC)
TRIALS = 1000


def _drawn(position: int, now: datetime, seed: int = 5, draws: int = 1) -> list[str]:
    ids = IdSource(seed)
    ids.start(position, now)
    return [ids.uuid() for _ in range(draws)]


def test_a_uuid_is_version_7_and_starts_with_the_engine_time_in_milliseconds() -> None:
    for k, now in enumerate(
        [T0, T0 + timedelta(microseconds=999), datetime(9000, 1, 1, tzinfo=UTC)]
    ):
        for made in _drawn(10 + k, now, draws=3):
            u = uuid.UUID(made)
            assert str(u) == made
            assert u.version == 7 and u.variant == uuid.RFC_4122
            assert u.int >> 80 == to_millis(now)


def test_ids_drawn_later_sort_later_as_text_and_as_numbers() -> None:
    """Consecutive ids land on the last pages of their indexes: a later millisecond gives
    a larger id whatever the position and rank drew."""
    made = []
    for k in range(500):
        made += _drawn(1000 - k, T0 + timedelta(milliseconds=k), draws=2)[1:]
    assert made == sorted(made)
    assert [uuid.UUID(m).int for m in made] == sorted(uuid.UUID(m).int for m in made)
    assert len(set(made)) == len(made)


def test_the_seed_position_rank_and_time_give_the_same_ids_every_time() -> None:
    assert _drawn(7, T0, draws=4) == _drawn(7, T0, draws=4)
    assert len(set(_drawn(7, T0, draws=4))) == 4
    assert _drawn(7, T0) != _drawn(7, T0, seed=6)
    assert _drawn(7, T0) != _drawn(8, T0)


def test_a_keyed_source_draws_what_the_seed_alone_does_not() -> None:
    """The id key of a database made without a seed: the same key gives the same ids,
    hex and codes; another key, or the seed alone, gives others."""

    def draws(ids: IdSource) -> list[str]:
        ids.start(7, T0)
        return [ids.uuid(), ids.hex(), ids.code()]

    key = bytes(range(32))
    assert IdSource(0, key).keyed and not IdSource(0).keyed
    mine = draws(IdSource(0, key))
    assert mine == draws(IdSource(5, key))
    assert not set(mine) & set(draws(IdSource(0)) + draws(IdSource(0, bytes(32))))
    assert uuid.UUID(mine[0]).version == 7 and uuid.UUID(mine[0]).int >> 80 == to_millis(T0)


def _pairs(gap: int) -> list[tuple[int, int]]:
    """A tenant's two ids in one millisecond, `gap` events of other customers between
    them: for each trial, the commands at positions p and p + 1 + gap."""
    out = []
    for trial in range(TRIALS):
        p = 1 + trial * 5000
        (first,) = _drawn(p, T0)
        (second,) = _drawn(p + 1 + gap, T0)
        out.append((uuid.UUID(first).int, uuid.UUID(second).int))
    return out


def test_two_ids_of_a_tenant_tell_nothing_of_what_others_made_between_them() -> None:
    """Within one millisecond, neither the order of a tenant's two ids nor their distance
    depends on how many events other customers had between them (a log position or a
    counter in the id would give both away); across milliseconds the ids differ by the
    time alone."""
    for gap in (0, 1000):
        pairs = _pairs(gap)
        assert all(a >> 80 == b >> 80 for a, b in pairs)  # the same time: the same prefix
        in_order = sum(a < b for a, b in pairs) / TRIALS
        assert 0.43 < in_order < 0.57, (gap, in_order)  # a coin flip, 4.4 sigma either side
        near = sum(abs(a - b) < 1 << 75 for a, b in pairs) / TRIALS  # the low 80 bits
        assert 0.66 < near < 0.84, (gap, near)  # 0.75 for independent uniform bits
    later = T0 + timedelta(milliseconds=250)
    for gap in (0, 1000):
        a, b = (uuid.UUID(_drawn(p, t)[0]).int for p, t in ((1, T0), (2 + gap, later)))
        assert (b >> 80) - (a >> 80) == 250
