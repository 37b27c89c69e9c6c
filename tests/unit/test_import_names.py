"""sandex installs one import name, `sandex`: the repository's `engine/` and `api_adapter/`
folders are `sandex.engine` and `sandex.api_adapter`, so a user's own `engine` package
meets nothing of sandex. These hold that no code reaches them by the bare names, which
would work in the repository (its root is on sys.path) and nowhere else."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BARE = ("engine", "api_adapter")
# The example project's own `engine` package, a user's, beside sandex: that is its point.
USERS_OWN = "examples/pytest/"


def python_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "*.py"], capture_output=True, text=True, check=True
    ).stdout.split()
    return [
        ROOT / name for name in listed if (ROOT / name).is_file() and not name.startswith(USERS_OWN)
    ]


def bare_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [
            f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in BARE
        ]
    return found


def test_no_module_imports_the_bare_folder_names() -> None:
    files = python_files()
    assert len(files) > 300  # the repository's own code, tests and benchmarks
    assert [hit for path in files for hit in bare_imports(path)] == []


def test_the_installed_packages_are_links_to_the_folders() -> None:
    for name in BARE:
        link = ROOT / "sandex" / name
        assert link.is_symlink() and link.resolve() == ROOT / name, name


def test_importing_all_of_sandex_loads_no_bare_name() -> None:
    """Every module of sandex, imported in a fresh interpreter run outside the repository
    (so its root is not on sys.path): none loads a module named `engine...` or
    `api_adapter...`, as it would if a string named one (importlib, a lazy export)."""
    code = (
        "import importlib, pkgutil, sys, sandex\n"
        "skip = ('sandex.api_adapter.cli.sweep',)\n"  # needs the sweep extra's modules
        "for m in pkgutil.walk_packages(sandex.__path__, 'sandex.', onerror=lambda n: None):\n"
        "    if not m.name.startswith(skip):\n"
        "        try:\n"
        "            importlib.import_module(m.name)\n"
        "        except ImportError as e:\n"
        "            if getattr(e, 'name', '') and e.name.split('.')[0] in ('engine', 'api_adapter'):\n"
        "                raise\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('engine', 'api_adapter')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd="/", check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_lazy_exports_name_real_modules() -> None:
    """`sandex.engine`'s and `sandex.api_adapter`'s lazy `__getattr__` tables name modules
    by string: each resolves."""
    for package in ("sandex.engine", "sandex.api_adapter"):
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            assert getattr(module, name) is not None, (package, name)
    assert pkgutil.resolve_name("sandex.api_adapter.cli:main")
