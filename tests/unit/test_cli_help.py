"""`sandex --version`, and every option of every subcommand documented with its default.

The walk covers whatever parsers and flags `sandex.api_adapter.cli.parser.parser()` holds, so a flag
added later fails here until it has help text that says its default."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import pytest

from sandex.api_adapter.cli import main
from sandex.api_adapter.cli.parser import MovedOption, parser

# A moved spelling is hidden from help on purpose: it only names the verb that took it.
SKIP = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction, MovedOption)


def _parsers(p: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def _rendered(p: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's lines of `--help`, unwrapped."""
    formatter = p.formatter_class(prog=p.prog, width=10_000)
    formatter.add_argument(action)
    return " ".join(formatter.format_help().split())


def _actions() -> list[Any]:
    found = []
    for p in _parsers(parser()):
        for action in p._actions:
            if not isinstance(action, SKIP):
                where = f"{p.prog} {'/'.join(action.option_strings) or action.dest}"
                found.append(pytest.param(where, p, action, id=where))
    return found


def test_the_walk_sees_every_subcommand() -> None:
    progs = {p.prog for p in _parsers(parser())}
    assert {"sandex serve", "sandex backtest", "sandex clients revoke"} <= progs
    assert len(_actions()) > 40


@pytest.mark.parametrize(("where", "p", "action"), _actions())
def test_every_argument_has_help_that_shows_its_default(
    where: str, p: argparse.ArgumentParser, action: argparse.Action
) -> None:
    assert action.help and action.help != argparse.SUPPRESS, f"{where}: no help text"
    takes_a_value = action.option_strings and action.nargs != 0 and not action.required
    if not takes_a_value:
        return  # a positional, a required option or an on/off flag: nothing defaults
    shown = _rendered(p, action)
    if action.default is None:
        # No value stands in: the help says in words what happens without the option.
        assert "(default: " in shown, f"{where}: say what happens without it: {shown}"
    else:
        assert f"(default: {action.default})" in shown, f"{where}: default not shown: {shown}"


def test_version_comes_from_the_package_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"sandex {version('sandex')}"


def test_help_never_shows_a_secret_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SANDEX_CLIENT_SECRET", "from-the-environment-42")
    texts = []
    for p in _parsers(parser()):
        formatter = p.formatter_class(prog=p.prog, width=10_000)
        formatter.add_arguments(p._actions)
        texts.append(formatter.format_help())
    assert not [t for t in texts if "from-the-environment-42" in t]
