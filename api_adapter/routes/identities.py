"""Identities (tag Identity), their documents, institution members, and the sandbox's
verdicts on them (tag Sandbox Identity): each request translated into its command."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request

from sandex.api_adapter import identity_shapes as shapes
from sandex.api_adapter.identity_bodies import (
    AddInstitutionMembersRequest,
    CreateIdentityRequest,
    DocumentUploadRequest,
    SandboxSetIdentityStatusRequest,
    UpdateIdentityRequest,
)
from sandex.api_adapter.paging import created_page, updated_times
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.commands import (
    AddInstitutionMembers,
    CreateIdentity,
    RemoveInstitutionMember,
    SetIdentitySandboxStatus,
    UpdateIdentity,
    UploadIdentityDocument,
)
from sandex.engine.kernel.errors import Invalid
from sandex.engine.read import identities as reads
from sandex.engine.read.queries import Page

router = APIRouter(prefix="/v2/identity", tags=["Identity"])


def _dump(model: Any) -> Any:
    """A nested part of a body as plain data, without the fields left out."""
    if model is None:
        return None
    if isinstance(model, list):
        return tuple(m.model_dump(exclude_none=True) for m in model)
    return model.model_dump(exclude_none=True)


@route(router, "CreateIdentity")
async def create_identity(
    request: Request, who: Caller, body: CreateIdentityRequest
) -> JSONResponse:
    command = CreateIdentity(
        actor=actor(request, who),
        person_details=_dump(body.person_details),
        institution_details=_dump(body.institution_details),
        institution_members=_dump(body.institution_members),
        ref_id=body.ref_id,
        metadata=body.metadata,
        tax_details=_dump(body.tax_details),
        tax_details_not_required=body.tax_details_not_required,
        customer_due_diligence=_dump(body.customer_due_diligence),
        is_merchant=body.is_merchant,
    )
    return JSONResponse(await run(request, command))


@route(router, "ListIdentities")
async def list_identities(
    request: Request,
    who: Caller,
    page: Annotated[Page, Depends(created_page)],
    updated: Annotated[dict[tuple[str, str], str], Depends(updated_times)],
    summary_status: shapes.Status | None = None,
    identity_type: Literal["PERSON", "INSTITUTION"] | None = None,
    order_by: Literal["CREATED_AT"] | None = None,
) -> JSONResponse:
    page.times.update(updated)
    queries = request.app.state.queries
    return JSONResponse(
        reads.list_identities(queries, who.customer_id, page, summary_status, identity_type)
    )


@route(router, "ListIdentityDocuments", tags=["Identity Documents"])
async def list_documents(
    request: Request, who: Caller, identity_id: str, include_pending_docs: bool = False
) -> JSONResponse:
    queries = request.app.state.queries
    return JSONResponse(
        reads.documents(queries, who.customer_id, identity_id, include_pending_docs)
    )


@route(router, "DocumentUpload", tags=["Identity Documents"])
async def upload_document(
    request: Request, who: Caller, identity_id: str, body: DocumentUploadRequest
) -> JSONResponse:
    command = UploadIdentityDocument(
        actor=actor(request, who),
        identity_id=identity_id,
        name=body.name,
        document_types=tuple(body.document_types or ()),
    )
    return JSONResponse(await run(request, command))


@route(router, "GetIdentity")
async def get_identity(
    request: Request,
    who: Caller,
    id: str,
    include_details: bool = False,
    include_institution_members: bool = False,
) -> JSONResponse:
    return JSONResponse(
        reads.identity(
            request.app.state.queries,
            who.customer_id,
            id,
            details=include_details,
            members=include_institution_members,
        )
    )


@route(router, "UpdateIdentity")
async def update_identity(
    request: Request, who: Caller, id: str, body: UpdateIdentityRequest
) -> JSONResponse:
    command = UpdateIdentity(
        actor=actor(request, who),
        identity_id=id,
        person_details=_dump(body.person_details),
        institution_details=_dump(body.institution_details),
        metadata=body.metadata,
        set_user_disabled=body.set_user_disabled,
        ref_id=body.ref_id,
        tax_details=_dump(body.tax_details),
        set_tax_details_not_required=body.set_tax_details_not_required,
        customer_due_diligence=_dump(body.customer_due_diligence),
        is_merchant=body.is_merchant,
        last_kyc_refresh_date=body.last_kyc_refresh_date,
    )
    return JSONResponse(await run(request, command))


@route(router, "SandboxSetIdentityStatus", tags=["Sandbox Identity"])
async def set_sandbox_status(
    request: Request, who: Caller, id: str, body: SandboxSetIdentityStatusRequest
) -> JSONResponse:
    statuses = body.model_dump(exclude_none=True, exclude={"effective_at"})
    effective_at = None
    if body.effective_at is not None:
        try:
            effective_at = parse_time(body.effective_at)
        except ValueError as exc:
            raise Invalid(
                "effective_at invalid: not an RFC 3339 time with offset", field="effective_at"
            ) from exc
    command = SetIdentitySandboxStatus(
        actor=actor(request, who), identity_id=id, statuses=statuses, effective_at=effective_at
    )
    return JSONResponse(await run(request, command))


@route(router, "AddInstitutionMembers", tags=["Institution Members"])
async def add_institution_members(
    request: Request, who: Caller, body: AddInstitutionMembersRequest
) -> JSONResponse:
    command = AddInstitutionMembers(
        actor=actor(request, who),
        institution_id=body.institution_id,
        members=_dump(body.members),
    )
    return JSONResponse(await run(request, command))


@route(router, "DeleteInstitutionMember", tags=["Institution Members"])
async def delete_institution_member(request: Request, who: Caller, id: str) -> JSONResponse:
    command = RemoveInstitutionMember(actor=actor(request, who), member_id=id)
    return JSONResponse(await run(request, command))
