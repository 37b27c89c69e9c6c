"""Bounded schemathesis runs: every operation, positive and negative examples, from
sandex's own /openapi.json in-process and from the reference document against a running
sandbox. `make fuzz` runs the same for longer (bench/fuzz.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import schemathesis

from tests.fuzzing import OWN_CHECKS, REFERENCE_CHECKS, funded_headers, fuzz
from tests.reference import document
from tests.test_crash import Process

EXAMPLES = 6


def _funded(sb: Any) -> None:
    for asset, amount in (("BTC", "10"), ("ETH", "100"), ("USD", "1000000")):
        sb.deposit(asset, amount)


def test_every_operation_of_sandexs_own_document(sandbox: Any) -> None:
    _funded(sandbox)
    schema = schemathesis.openapi.from_asgi("/openapi.json", sandbox.app)
    failures, calls = fuzz(
        schema,
        headers=sandbox.headers,
        max_examples=EXAMPLES,
        checks=OWN_CHECKS,
        fixed_path={"profile_id": "default", "market": "BTCUSD"},
    )
    assert calls > 200
    assert not failures, "\n".join(failures)


def test_every_operation_of_the_reference_against_a_running_sandbox(tmp_path: Path) -> None:
    reference = document()  # skips, saying why, where the reference is absent
    server = Process(tmp_path / "fuzz.db", tmp_path / "server.log")
    try:
        headers = funded_headers(server.base)
        schema = schemathesis.openapi.from_dict(reference)
        failures, calls = fuzz(
            schema,
            headers=headers,
            max_examples=EXAMPLES,
            checks=REFERENCE_CHECKS,
            base_url=f"{server.base}/v2",
            fixed_path={"profile_id": "default", "market": "BTCUSD"},
        )
    finally:
        server.stop()
    assert calls > 150
    assert not failures, "\n".join(failures)
