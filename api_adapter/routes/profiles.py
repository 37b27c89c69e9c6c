"""Profiles and their balances."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request

from sandex.api_adapter.paging import created_page
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import CreateProfileRequest, UpdateProfileRequest
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.kernel.commands import CreateProfile, DeactivateProfile, UpdateProfile
from sandex.engine.read.queries import Page

router = APIRouter(prefix="/v2", tags=["Profiles"])

# The reference's flag to show deactivated profiles too (on GetProfile; sandex's list
# takes it as well, where a deactivated profile is otherwise left out).
Deactivated = Annotated[bool | None, Query()]


@route(router, "ListProfiles")
async def list_profiles(
    request: Request,
    who: Caller,
    page: Annotated[Page, Depends(created_page)],
    nickname: str | None = None,
    ids: Annotated[list[str] | None, Query()] = None,
    include_deactivated: Deactivated = None,
    order_by: Literal["CREATED_AT"] | None = None,  # the one order there is
) -> JSONResponse:
    return JSONResponse(
        request.app.state.queries.list_profiles(
            who.customer_id, page, nickname, ids, bool(include_deactivated)
        )
    )


@route(router, "CreateProfile")
async def create_profile(request: Request, who: Caller, body: CreateProfileRequest) -> JSONResponse:
    command = CreateProfile(
        actor=actor(request, who), nickname=body.nickname, description=body.description
    )
    return JSONResponse(await run(request, command))


@route(router, "GetProfile")
async def get_profile(
    request: Request, who: Caller, profile_id: str, include_deactivated: Deactivated = None
) -> JSONResponse:
    return JSONResponse(
        request.app.state.queries.profile(who.customer_id, profile_id, bool(include_deactivated))
    )


@route(router, "UpdateProfile")
async def update_profile(
    request: Request, who: Caller, profile_id: str, body: UpdateProfileRequest
) -> JSONResponse:
    command = UpdateProfile(
        actor=actor(request, who), profile_id=profile_id, nickname=body.nickname
    )
    return JSONResponse(await run(request, command))


@route(router, "DeactivateProfile")
async def deactivate_profile(request: Request, who: Caller, profile_id: str) -> JSONResponse:
    command = DeactivateProfile(actor=actor(request, who), profile_id=profile_id)
    return JSONResponse(await run(request, command))


@route(router, "ListProfileBalances")
async def list_balances(
    request: Request,
    who: Caller,
    profile_id: str,
    assets: Annotated[list[str] | None, Query()] = None,
) -> JSONResponse:
    result = request.app.state.queries.balances(who.customer_id, profile_id)
    if assets:
        wanted = set(assets)
        result["items"] = [b for b in result["items"] if b["asset"] in wanted]
    return JSONResponse(result)


@route(router, "GetProfileBalance")
async def get_balance(request: Request, who: Caller, profile_id: str, asset: str) -> JSONResponse:
    return JSONResponse(request.app.state.queries.balance(who.customer_id, profile_id, asset))
