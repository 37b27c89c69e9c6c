"""Identity documents: what a client sends for an identity's verification, kept as
metadata only (name, document types, time). sandex has no file service: the upload URL
it answers names a host under `.invalid`, which never resolves, so nothing is sent."""

from __future__ import annotations

from typing import Any

import orjson

from sandex.engine.domain.identity.identities import find_identity
from sandex.engine.kernel.commands import UploadIdentityDocument
from sandex.engine.kernel.errors import AlreadyExists, Invalid
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

MAX_NAME = 260
UPLOAD_HOST = "https://uploads.sandex.invalid/identity-documents/"


def documents(state: State) -> dict[str, dict[str, Any]]:
    """Documents by file id."""
    return state.ext.setdefault("identity_documents", {})  # type: ignore[no-any-return]


def document_view(record: dict[str, Any]) -> dict[str, Any]:
    return {
        k: record[k] for k in ("file_id", "name", "document_types", "created_at") if k in record
    }


def upload_document(ctx: Ctx, cmd: UploadIdentityDocument) -> dict[str, Any]:
    state = ctx.state
    identity = find_identity(state, cmd.actor.customer_id, cmd.identity_id)
    if not cmd.name or len(cmd.name) > MAX_NAME:
        raise Invalid(f"must provide a file name, up to {MAX_NAME} characters", field="name")
    for record in documents(state).values():
        if record["identity_id"] == identity["id"] and record["name"] == cmd.name:
            raise AlreadyExists(f'file named "{cmd.name}" already exists', {"name": cmd.name})
    file_id = ctx.ids.uuid()
    record = {
        "file_id": file_id,
        "identity_id": identity["id"],
        "customer_id": identity["customer_id"],
        "name": cmd.name,
        "document_types": list(cmd.document_types),
        "created_at": ctx.now_text,
    }
    ctx.emit("IdentityDocumentAdded", f"identity-{identity['id']}", {"document": record})
    return {"file_id": file_id, "name": cmd.name, "upload_url": UPLOAD_HOST + file_id}


def _added(state: State, e: Event) -> None:
    record = dict(e.data["document"])
    record["seq"] = e.position
    documents(state)[record["file_id"]] = record
    state.mark("identity_document", record["file_id"])


def _row(state: State, key: str) -> dict[str, Any] | None:
    r = documents(state).get(key)
    if r is None:
        return None
    return {
        "file_id": r["file_id"],
        "identity_id": r["identity_id"],
        "customer_id": r["customer_id"],
        "seq": r["seq"],
        "body": orjson.dumps(document_view(r)).decode(),
    }


TABLE = ReadModelTable(
    "identity_documents",
    {"file_id": str, "identity_id": str, "customer_id": str, "seq": int, "body": str},
    pk=("file_id",),
    kind="identity_document",
    row=_row,
    key_columns=("file_id",),
    keys=lambda s: documents(s).keys(),
)
REGISTRATION = Registration(
    deciders={UploadIdentityDocument: upload_document},
    appliers={"IdentityDocumentAdded": _added},
    tables=(TABLE,),
)
