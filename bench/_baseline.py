"""The trivial endpoint that HTTP figures are compared against: FastAPI, a strict pydantic
body and an orjson answer, no engine. Serve it with `uvicorn bench._baseline:app`."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, StringConstraints
from starlette.responses import Response

app = FastAPI()


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    asset: Annotated[str, StringConstraints(max_length=200)]
    amount: Annotated[str, StringConstraints(pattern=r"^[0-9]*\.?[0-9]+$", max_length=64)]


@app.post("/v2/trivial")
async def trivial(body: _Body) -> Response:
    return Response(
        orjson.dumps({"asset": body.asset, "amount": body.amount}), media_type="application/json"
    )
