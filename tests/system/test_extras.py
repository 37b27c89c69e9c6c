"""sandex without its extras (`sandex[sweep]`, `sandex[postgres]`), as `pip install
sandex` gives it: the server, the app and every command's help work, and a command that
needs a missing extra says in one line which to install, exit status 2, no traceback.

The extras' modules are made unimportable in a fresh interpreter by a `sitecustomize`
put first on its path: it is the interpreter, not this test's venv, that lacks them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sandex.api_adapter.cli.errors import EXTRAS
from tests.support.server_helpers import ROOT, SANDEX, free_port

POSTGRES_STORE = "sandex.engine.store.postgres"  # postgres, postgres_schema, postgres_reads

SHIM = """
import sys

BLOCKED = {blocked!r}


class _Uninstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Uninstalled())
"""


def _without(tmp_path: Path, blocked: set[str], *args: str) -> subprocess.CompletedProcess[str]:
    """`args` run in an interpreter where the modules `blocked` are not installed."""
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(SHIM.format(blocked=sorted(blocked)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim), str(ROOT)])}
    return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def _one_line(done: subprocess.CompletedProcess[str], extra: str) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert f"pip install 'sandex[{extra}]'" in lines[0], lines[0]
    return lines[0]


def test_the_shim_makes_a_module_unimportable(tmp_path: Path) -> None:
    done = _without(tmp_path, {"optuna"}, sys.executable, "-c", "import optuna")
    assert done.returncode != 0 and "No module named 'optuna'" in done.stderr


def test_sweep_without_its_extra_says_which_to_install(tmp_path: Path) -> None:
    bars = tmp_path / "bars.csv"
    bars.write_text("timestamp,open,high,low,close\n2024-01-01T00:00:00Z,1,1,1,1\n")
    for module in sorted(m for m, extra in EXTRAS.items() if extra == "sweep"):
        done = _without(
            tmp_path,
            {module},
            *SANDEX,
            "sweep",
            "--data",
            str(bars),
            "--market",
            "BTCUSD",
            "--strategy",
            "x.py:X",
            "--optuna",
            "2",
            "--range",
            "n=1:3",
            "--out",
            str(tmp_path / "out"),
        )
        line = _one_line(done, "sweep")
        assert module in line and "sandex sweep" in line
        assert not (tmp_path / "out").exists()  # said before any run


def test_a_postgresql_database_without_its_extra_says_which_to_install(tmp_path: Path) -> None:
    url = f"postgresql://sandex@127.0.0.1:{free_port()}/sandex"
    for args in (["serve", "--db", url, "--port", "0"], ["verify", "--db", url]):
        line = _one_line(
            _without(tmp_path, {"psycopg", "psycopg_pool"}, *SANDEX, *args), "postgres"
        )
        assert "psycopg" in line


def test_the_app_the_server_and_the_help_need_no_extra(tmp_path: Path) -> None:
    blocked = set(EXTRAS)
    done = _without(tmp_path, blocked, sys.executable, "-c", "import api_adapter.app")
    assert done.returncode == 0, done.stderr
    for args in (["--help"], ["serve", "--help"], ["sweep", "--help"]):
        done = _without(tmp_path, blocked, *SANDEX, *args)
        assert done.returncode == 0, done.stderr
    # `sandex serve` on SQLite starts and answers, `sandex wait` says so, Ctrl-C stops it
    shim_env = tmp_path / "shim"
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim_env), str(ROOT)])}
    serve = subprocess.Popen(
        [*SANDEX, "serve", "--db", str(tmp_path / "s.db"), "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        waited = _without(tmp_path, blocked, *SANDEX, "wait", "--url", f"http://127.0.0.1:{port}")
        assert waited.returncode == 0, waited.stderr
    finally:
        serve.send_signal(2)
        _, err = serve.communicate(timeout=30)
    assert serve.returncode == 0 and "Traceback" not in err, err


def test_no_extra_is_imported_by_the_installed_packages_at_import_time(tmp_path: Path) -> None:
    """Every module of engine/ and api_adapter/ imports without the extras: their
    imports are inside the functions that need them. The PostgreSQL store's own modules
    are the postgres extra's implementation, imported only inside the store registry's
    functions (`sandex.engine.store.opening`), never at import time."""
    code = (
        "import importlib, pkgutil\n"
        "import sandex.api_adapter as api_adapter, sandex.engine as engine\n"
        "for pkg in (engine, api_adapter):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        f"        if not m.name.startswith({POSTGRES_STORE!r}):\n"
        "            importlib.import_module(m.name)\n"
    )
    done = _without(tmp_path, set(EXTRAS), sys.executable, "-c", code)
    assert done.returncode == 0, done.stderr[-2000:]
