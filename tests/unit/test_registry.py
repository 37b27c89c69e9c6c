"""The registry: built from explicit registrations, one per engine, nothing registered
by importing a module."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandex.engine import open_engine
from sandex.engine.domain.registrations import REGISTRATIONS, domain_registry
from sandex.engine.kernel.commands import Command
from sandex.engine.kernel.errors import Invalid
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration, build_registry
from sandex.engine.tools.verify import verify
from tests.conftest import make_settings


@dataclass(frozen=True, slots=True)
class _Note(Command):
    n: int = 0


def _noted(state: Any, event: Any) -> None:
    state.ext["noted"] = event.data["n"]


_NOTE = Registration(
    {_Note: lambda ctx, cmd: ctx.emit("Noted", "notes", {"n": cmd.n})}, {"Noted": _noted}
)


def test_a_name_registered_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        build_registry([_NOTE, Registration(appliers={"Noted": _noted})])


def test_observers_follow_the_appliers_and_a_state_replay_skips_them() -> None:
    seen: list[str] = []
    watch = Registration(observers={"Noted": lambda state, event: seen.append("observed")})
    registry = build_registry([watch, _NOTE])  # an observer may come before its applier
    state = type("S", (), {"ext": {}})()
    registry.appliers["Noted"](state, type("E", (), {"data": {"n": 1}})())
    assert seen == ["observed"] and state.ext == {"noted": 1}
    registry.state_appliers["Noted"](state, type("E", (), {"data": {"n": 2}})())
    assert seen == ["observed"] and state.ext == {"noted": 2}


def test_each_build_is_its_own_and_the_domain_registers_every_module() -> None:
    one, two = domain_registry(), domain_registry()
    assert one.deciders == two.deciders and one.deciders is not two.deciders
    assert set(one.appliers) == {t for r in REGISTRATIONS for t in r.appliers}


def test_two_engines_in_one_process_have_their_own_registries(tmp_path: Path) -> None:
    extended = build_registry([*REGISTRATIONS, _NOTE])
    with (
        open_engine(tmp_path / "a.db", make_settings(), registry=extended) as noting,
        open_engine(tmp_path / "b.db", make_settings()) as plain,
    ):
        noting.execute(_Note(n=7))
        assert noting.state.ext["noted"] == 7
        with pytest.raises(Invalid, match="unknown command _Note"):
            plain.execute(_Note(n=7))
    assert verify(str(tmp_path / "a.db"), registry=extended) == []


def test_read_models_invariants_and_prices_come_from_the_registrations() -> None:
    from sandex.engine.domain.transfers import deposit_addresses
    from sandex.engine.runtime.composition import TABLES

    registry = domain_registry()
    assert [t.name for t in registry.tables] == list(TABLES)
    assert {"orders", "balances", "event_feed", "snapshots"} <= set(TABLES)
    declared = [c for r in REGISTRATIONS for c in r.checks]
    assert list(registry.checks) == declared and len(declared) == 5
    assert deposit_addresses.check_held in declared
    assert len(registry.price_sources) == 1  # the market's last prints


def test_a_table_or_kind_registered_twice_is_refused() -> None:
    table = ReadModelTable("notes", {"n": int}, pk=("n",), kind="note")
    other = ReadModelTable("others", {"n": int}, pk=("n",), kind="note")
    with pytest.raises(ValueError, match="registered twice"):
        build_registry([Registration(tables=(table,)), Registration(tables=(table,))])
    with pytest.raises(ValueError, match="registered twice"):
        build_registry([Registration(tables=(table, other))])


def test_importing_the_domain_registers_nothing() -> None:
    """Every hook is a Registration field: no module keeps a list others append to."""
    import sandex.engine.domain.transfers.notional_prices as prices
    import sandex.engine.kernel.invariants as invariants
    import sandex.engine.runtime.projection as projection

    assert not hasattr(projection, "register") and not hasattr(projection, "register_append")
    assert not hasattr(invariants, "CHECKS") and not hasattr(prices, "SOURCES")


def _listed(state: Any, event: Any) -> None:
    state.ext.setdefault("listed", []).append(event.data["n"])
    state.mark("listed", event.data["n"])


_LISTED = Registration(
    {_Note: lambda ctx, cmd: ctx.emit("Listed", "lists", {"n": cmd.n})},
    {"Listed": _listed},
    tables=(
        ReadModelTable(
            "listed",
            {"n": int},
            pk=("n",),
            kind="listed",
            row=lambda state, n: {"n": n} if n in state.ext.get("listed", ()) else None,
            key_columns=("n",),
            keys=lambda state: state.ext.get("listed", ()),
        ),
    ),
)


def test_an_engine_projects_the_read_models_of_the_registry_it_is_given(tmp_path: Path) -> None:
    """The read-model tables were the domain's, gathered at import: an engine given a
    registry with a table of its own had no such table and no rows for its kind."""
    extended = build_registry([*REGISTRATIONS, _LISTED])
    db = tmp_path / "listed.db"
    with open_engine(db, make_settings(), registry=extended) as engine:
        engine.execute(_Note(n=3))
        engine.execute(_Note(n=5))
        assert sorted(engine.store.read_model_rows("listed", ["n"])) == [(3,), (5,)]
    assert verify(str(db), registry=extended) == []
    with open_engine(tmp_path / "plain.db", make_settings()) as plain:
        assert "listed" not in plain.projection.tables
