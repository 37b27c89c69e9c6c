"""A command imports only what it runs (issue 20: a CLI that starts at once).

Each check runs in a fresh interpreter and looks at `sys.modules` afterwards: no timing,
only which heavy packages were imported. `sandex --help` loads neither the engine nor
the HTTP app; a backtest loads no FastAPI and no pandas; sqlite-utils is imported to
create a schema, never to open a database whose schema is whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "scenarios" / "backtests"
HTTP = ("fastapi", "starlette", "uvicorn", "httpx")


def _loaded(code: str, tmp_path: Path) -> set[str]:
    """The top-level packages (and sandex's own: `sandex.engine`...) imported by the end of
    `code`, run in a new interpreter."""
    script = (
        "import json, sys\n"
        + code
        + "\nprint(json.dumps(sorted({'.'.join(m.split('.')[:2 if m.startswith('sandex.') else 1])"
        " for m in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CI": "true"},
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def _cli(*args: str) -> str:
    return (
        "from sandex.api_adapter.cli import main\n"
        "try:\n"
        f"    main({list(args)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
    )


def test_help_loads_neither_the_engine_nor_the_http_app(tmp_path: Path) -> None:
    loaded = _loaded(_cli("--help"), tmp_path)
    heavy = {"sandex.engine", "pandas", "numpy", "sqlite_utils", "structlog", "pydantic", *HTTP}
    assert loaded & heavy == set()


def test_a_backtest_loads_no_http_app_and_no_pandas(tmp_path: Path) -> None:
    run = _cli(
        "backtest",
        "--data",
        str(EXAMPLES / "btcusd_hourly.csv"),
        "--market",
        "BTCUSD",
        "--strategy",
        f"{EXAMPLES / 'ma_cross.py'}:MaCross",
        "--no-progress",
    )
    loaded = _loaded(run, tmp_path)
    assert (
        "sandex.engine" in loaded and "sandex.api_adapter" in loaded and "sqlite_utils" in loaded
    )  # it did run: a new database
    assert loaded & {"pandas", "structlog", *HTTP} == set()


def test_sqlite_utils_creates_a_schema_and_is_not_needed_to_open_one(tmp_path: Path) -> None:
    db = tmp_path / "whole.db"
    store = (
        "from sandex.engine.runtime.composition import TABLES\n"
        "from sandex.engine.store import SqliteEventStore\n"
        f"SqliteEventStore({str(db)!r}, tables=TABLES).close()\n"
    )
    assert "sqlite_utils" in _loaded(store, tmp_path)
    assert "sqlite_utils" not in _loaded(store, tmp_path)


def test_sqlite_utils_is_imported_without_pandas_which_stays_importable(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    code = (
        "from sandex.engine.store import SqliteEventStore\n"
        "SqliteEventStore(':memory:').close()\n"
        "assert 'pandas' not in sys.modules and 'numpy' not in sys.modules\n"
        "import pandas\n"
        "import sqlite_utils.db\n"
        "assert sqlite_utils.db.pd is None and sqlite_utils.db.np is None\n"
    )
    assert "pandas" in _loaded(code, tmp_path)


def test_sqlite_utils_takes_pandas_when_it_is_in_already(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    code = (
        "import pandas\n"
        "from sandex.engine.store import SqliteEventStore\n"
        "SqliteEventStore(':memory:').close()\n"
        "import sqlite_utils.db\n"
        "assert sqlite_utils.db.pd is pandas\n"
    )
    _loaded(code, tmp_path)


def test_only_the_thread_importing_sqlite_utils_is_refused_pandas() -> None:
    from sandex.engine.store.sqlite import _NotForSqliteUtils

    finder = _NotForSqliteUtils()
    seen: list[object] = []
    other = threading.Thread(target=lambda: seen.append(finder.find_spec("pandas", None)))
    other.start()
    other.join()
    assert seen == [None]
    with pytest.raises(ModuleNotFoundError):
        finder.find_spec("pandas", None)
    assert finder.find_spec("orjson", None) is None


def test_the_app_factory_is_still_exported_by_the_package(tmp_path: Path) -> None:
    loaded = _loaded(
        "from sandex.api_adapter import create_app\nassert callable(create_app)", tmp_path
    )
    assert "fastapi" in loaded
