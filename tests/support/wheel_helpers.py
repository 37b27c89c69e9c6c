"""sandex as a user installs it: the built wheel (once per test session) and fresh
virtual environments to put it in, for the slow tests that install it (test_install,
test_example_project)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What the wheel is built from: the project's metadata and the one installed package
# (sandex/engine and sandex/api_adapter are links, copied as the folders they name).
SOURCES = ("pyproject.toml", "README.md")
PACKAGE = "sandex"

_built: dict[str, Path] = {}


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment with nothing of the source tree: no PYTHONPATH, no
    active venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


def run(*cmd: str | Path, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    """`cmd`'s output; a failure shows its exit status and both streams."""
    done = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{cmd}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sandex's wheel, built as `pip install .` builds it (in an isolated build
    environment) from a copy of the sources, once per session."""
    if PACKAGE not in _built:
        where = tmp_path_factory.mktemp("wheel")
        src = where / "src"
        src.mkdir()
        for name in SOURCES:
            shutil.copy(ROOT / name, src / name)
        shutil.copytree(ROOT / PACKAGE, src / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
        run(
            *(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", where / "dist", src),
            cwd=where,
            env=clean_env(),
        )
        (wheel,) = (where / "dist").glob("sandex-*.whl")
        _built[PACKAGE] = wheel
    return _built[PACKAGE]


def fresh_venv(where: Path) -> Path:
    """A new venv at `where` (nothing installed but pip): its python."""
    run(sys.executable, "-m", "venv", where, cwd=where.parent, env=clean_env())
    return where / "bin" / "python"


def install_locked(python: Path, *what: str | Path, cwd: Path) -> None:
    """`what` installed with the runtime lock's pins and nothing else: the lock is closed
    (pip-compile's), so nothing need be resolved (--no-deps)."""
    run(
        *(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"),
        *("-r", ROOT / "requirements.lock", *what),
        cwd=cwd,
        env=clean_env(),
    )
