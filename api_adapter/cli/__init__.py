"""The `sandex` command line: one module per verb, `parser` assembles them, `main` runs
one (`python -m sandex.api_adapter.cli` and the `sandex` entry point).

`main` is imported when first asked for (PEP 562): a module of the package that a
server needs without the command line (`errors`, which `server.listen` raises) does not
load every verb's parser with it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandex.api_adapter.cli.main import main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "main":
        from sandex.api_adapter.cli.main import main

        # the submodule's import made `main` the package's name for the module: the
        # function, as `from sandex.api_adapter.cli import main` means
        globals()["main"] = main
        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
