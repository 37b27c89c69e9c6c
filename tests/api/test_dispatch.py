"""The adapter hands the commands of one event-loop turn to the writer in one
`Engine.submit_many`, and gives each request its own answer back."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx


def test_requests_of_one_turn_share_one_submit_and_keep_their_own_answers(
    sandbox_factory: Any,
) -> None:
    sb = sandbox_factory()
    calls: list[int] = []
    real = sb.engine.submit_many

    def counting(commands: Any) -> Any:
        calls.append(len(commands))
        return real(commands)

    sb.engine.submit_many = counting
    path = "/v2/sandbox/profiles/default/deposit"
    bodies = [{"asset": "BTC", "amount": f"0.{i + 1}"} for i in range(8)]
    bodies[3] = {"asset": "BTC", "amount": "-0.4"}  # refused: its own 400, nobody else's

    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=sb.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://sandex") as client:
            return await asyncio.gather(
                *(client.post(path, json=b, headers=sb.headers) for b in bodies)
            )

    answers = asyncio.run(go())
    statuses = [a.status_code for a in answers]
    assert statuses == [200] * 3 + [400] + [200] * 4
    assert len({a.json()["activity_id"] for i, a in enumerate(answers) if i != 3}) == 7
    assert sb.balance("BTC")["available"] == "3.2"  # 0.1 + ... + 0.8 but the 0.4 refused
    assert sum(calls) <= 8 and max(calls) > 1  # handed over together, not one by one
