"""The suite passes in a user's clone, which has no `../shared` beside it.

Every read of the reference documents goes through tests/support/reference.py, which takes its
folder from SANDEX_REFERENCE_DIR (default ../shared/reference) and skips, saying why,
where they are absent. These tests keep it so: nothing else names the shared folder, and
the tests that read the reference skip, neither fail nor error, when it is missing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support import reference

ROOT = Path(__file__).resolve().parents[2]

# A path that names the shared folder: "shared" as a string, or as a path component.
SHARED_PATH = re.compile(r"""(["'])shared\1|[/\\]shared\b|\bshared[/\\]""")
# Prose may say where the reference lives; code, scenarios and settings may not reach it.
PROSE = {".md", ".csv", ".txt"}
# The helper itself, and this file, which tests it.
ALLOWED = {ROOT / "tests" / "support" / "reference.py", Path(__file__).resolve()}
SKIPPED_DIRS = {".git", ".venv", "__pycache__", "node_modules", "build", "dist"}


def _tree() -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        files += [Path(dirpath) / name for name in filenames]
    return files


def test_nothing_but_the_reference_helper_names_the_shared_folder() -> None:
    offenders = []
    for file in _tree():
        if file.suffix in PROSE or file in ALLOWED:
            continue
        try:
            text = file.read_text()
        except (UnicodeDecodeError, OSError):
            continue  # binary files (databases, images) name no path to read
        for number, line in enumerate(text.splitlines(), 1):
            if SHARED_PATH.search(line):
                offenders.append(f"{file.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, (
        "read the reference through tests/support/reference.py (it skips where it is absent):\n"
        + "\n".join(offenders)
    )


def test_the_folder_comes_from_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(reference.SETTING, raising=False)
    assert reference.folder() == ROOT.parent / "shared" / "reference"
    monkeypatch.setenv(reference.SETTING, "elsewhere/ref")
    assert reference.folder() == ROOT / "elsewhere" / "ref"
    monkeypatch.setenv(reference.SETTING, "/abs/ref")
    assert reference.folder() == Path("/abs/ref")


def test_a_missing_reference_skips_and_names_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-such-folder"
    monkeypatch.setenv(reference.SETTING, str(missing))
    assert reference.find(reference.SUBSET_NAME) is None
    with pytest.raises(pytest.skip.Exception, match=re.escape(str(missing))):
        reference.document()
    with pytest.raises(pytest.skip.Exception, match="SANDEX_REFERENCE_DIR"):
        reference.path("v2-subset.json")


def _readers() -> list[Path]:
    """The test files that read the reference: each imports the helper."""
    return sorted(
        f
        for f in (ROOT / "tests").glob("*/test_*.py")
        if re.search(
            r"^from tests\.support\.reference import|^from tests\.support import reference",
            f.read_text(),
            re.M,
        )
        and f.name != Path(__file__).name
    )


@pytest.mark.slow
def test_the_reference_reading_tests_skip_where_the_reference_is_missing(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no-reference-here"
    report = tmp_path / "report.xml"
    files = _readers()
    names = {f.name for f in files}
    # The three that once read the document directly, and failed in a user's clone.
    assert {
        "test_internal_transfers.py",
        "test_withdrawals.py",
        "test_withdrawal_fees.py",
    } <= names
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            f"--junitxml={report}",
            *[str(f.relative_to(ROOT)) for f in files],
        ],
        cwd=ROOT,
        env={**os.environ, reference.SETTING: str(missing)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    tail = (done.stdout + done.stderr)[-3000:]
    assert report.exists(), tail
    failed, skipped = [], {}
    for case in ET.parse(report).iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(test)
        mark = case.find("skipped")
        if mark is not None:
            skipped[test] = mark.get("message", "")
    assert done.returncode == 0 and not failed, f"failed or errored: {failed}\n{tail}"
    ours = {test for test, message in skipped.items() if str(missing) in message}
    for name in (
        "tests.api.test_internal_transfers::test_moves_funds_at_once_as_a_completed_pair_sharing_a_group_id",
        "tests.api.test_withdrawals::test_a_withdrawal_is_a_pending_debit_with_every_required_field",
        "tests.api.test_withdrawal_fees::test_a_quote_by_amount_has_every_field_and_total_is_amount_plus_fee",
    ):
        assert name in ours, f"{name} did not skip for the missing reference: {skipped}"
    # Each file that imports the helper has at least one test that reads the reference.
    for f in files:
        assert any(t.startswith(f"tests.{f.parent.name}.{f.stem}::") for t in ours), (
            f"{f.name}: no skip"
        )
