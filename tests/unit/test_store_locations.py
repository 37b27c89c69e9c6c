"""One door to the store: `locate` says what a `--db` names, the backend registry opens
it, and nothing outside engine/store decides by a `--db`'s text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sandex.engine.store import (
    BulkLoad,
    Forking,
    LogFolding,
    MemoryEventStore,
    SqliteEventStore,
    backend,
    capability,
    locate,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("db", "kind"),
    [
        ("sandex.db", "file"),
        ("/tmp/postgresql.db", "file"),
        (":memory:", "memory"),
        ("file::memory:?cache=shared", "memory"),
        ("postgresql://u@h/db", "server"),
        ("postgres://u@h/db", "server"),
    ],
)
def test_a_location_is_chosen_by_its_scheme(db: str, kind: str) -> None:
    assert locate(db).kind == kind
    assert locate(db).on_server == (kind == "server")
    assert locate(Path(db) if kind == "file" else db).kind == kind


def test_a_file_exists_when_it_is_there_and_memory_never(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    assert not locate(db).exists()
    db.write_bytes(b"")
    assert locate(db).exists()
    assert not locate(":memory:").exists()


def test_a_server_location_hides_its_password_and_names_its_schema() -> None:
    where = locate("postgresql://me:secret@host:5433/db?schema=w_abc&sslmode=disable")
    assert where.display() == "postgresql://me:***@host:5433/db?schema=w_abc&sslmode=disable"
    assert where.schema == "w_abc"
    url, options = where.conninfo()
    assert "schema" not in url and "sslmode=disable" in url
    assert options == "-c search_path=w_abc"
    assert locate("postgresql://me@host/db").schema is None
    assert locate("postgresql://me@host/db").conninfo()[1] == ""


def test_a_schema_is_a_plain_name() -> None:
    with pytest.raises(ValueError, match="schema"):
        _ = locate("postgresql://h/db?schema=x;drop").schema


def test_each_schema_of_a_database_has_its_own_side_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SANDEX_STATE_DIR", str(tmp_path))
    plain = locate("postgresql://me@host/db")
    one = plain.with_schema("w_one")
    assert one.schema == "w_one"
    bases = {plain.local_base(), one.local_base(), plain.with_schema("w_two").local_base()}
    assert len(bases) == 3
    assert locate("x.db").local_base() == "x.db"


def test_a_store_beside_a_database_is_a_file_in_its_folder_or_a_schema_of_the_same_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SANDEX_STATE_DIR", str(tmp_path / "state"))
    beside_file = locate(str(tmp_path / "x.db")).beside("w_1")
    assert beside_file.text == str(tmp_path / "x.db.worlds" / "w_1.db")
    assert beside_file.local_base() == beside_file.text
    main = locate("postgresql://me:pw@host/db?sslmode=disable")
    world = main.beside("w_0af3")
    assert world.on_server and world.schema == "w_0af3"
    assert world.without_schema().text == main.text
    # its side files (key file, ...) in the folder beside the database, whatever the
    # schema it is beside: every schema of a database is beside every other
    folder = main.beside_folder()
    assert folder == tmp_path / "state" / "pg-me@host_5432_db.worlds"
    assert Path(world.local_base()) == folder / "w_0af3"
    assert main.with_schema("other").beside("w_0af3") == world
    assert main.with_schema("other").beside_folder() == folder
    with pytest.raises(ValueError, match="schema"):
        main.beside("w_Upper-case")
    with pytest.raises(ValueError, match="memory"):
        locate(":memory:").beside("w_1")


def test_the_read_side_shares_a_pool_only_on_a_server() -> None:
    assert not backend("x.db").shared_reads
    assert backend("postgresql://h/db").shared_reads


def test_optional_capabilities_are_asked_for_by_type() -> None:
    memory = MemoryEventStore()
    sqlite = SqliteEventStore(":memory:")
    try:
        assert capability(memory, BulkLoad) is None
        assert capability(memory, LogFolding) is None
        assert capability(memory, Forking) is memory
        assert capability(sqlite, BulkLoad) is sqlite
        assert capability(sqlite, LogFolding) is sqlite
        assert capability(sqlite, Forking) is sqlite
    finally:
        sqlite.close()


def test_no_module_outside_the_store_decides_by_a_databases_text() -> None:
    """`is_server_url` and a `postgres` scheme test belong to engine/store alone; the read
    side gets a typed reader, never a store's `.conn` behind a type: ignore."""
    found = []
    for path in sorted([*ROOT.glob("engine/**/*.py"), *ROOT.glob("api_adapter/**/*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("engine/store/"):
            continue
        text = path.read_text()
        if "is_server_url" in text or re.search(r"startswith\(\(?\"postgres", text):
            found.append(f"{rel}: decides by the URL's text")
        if re.search(r"\.conn\b.*type: ignore\[attr-defined\]", text):
            found.append(f"{rel}: takes a store's .conn behind a type: ignore")
    assert found == []
