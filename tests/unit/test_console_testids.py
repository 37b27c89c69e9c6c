"""docs/console.md names every `data-testid` of the console's pages, and nothing else:
the browser tests drive the pages by these names."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = ROOT / "api_adapter" / "console"
# Made from a loop in its template (`book-{{ side }}`): the doc names what it makes.
MADE = {"book-asks", "book-bids"}
# The doc's list also names attributes and classes beside the ids.
NOT_IDS = re.compile(r"^(data-.*|resting|ladder)$")


def _in_pages() -> set[str]:
    found: set[str] = set()
    for path in [*CONSOLE.glob("templates/*.html"), CONSOLE / "charts.py"]:
        found |= set(re.findall(r'data-testid="([^"{]+)"', path.read_text()))
    return found | MADE


def _in_doc() -> set[str]:
    listed = (ROOT / "docs" / "console.md").read_text().split("## Elements for browser tests")[1]
    return {name for name in re.findall(r"`([a-z0-9-]+)`", listed) if not NOT_IDS.match(name)}


def test_the_doc_lists_every_test_id_of_the_pages() -> None:
    assert _in_pages() - _in_doc() == set()


def test_the_doc_lists_no_test_id_the_pages_lack() -> None:
    assert _in_doc() - _in_pages() == set()
