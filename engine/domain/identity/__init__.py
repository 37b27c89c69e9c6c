"""Identities (persons and institutions), their documents and institution members, the
accounts that tie identities to profiles and their members, and the rule that an
identity acts for an account only when approved and allowed to (permissions.py).
One noun per module; REGISTRATIONS lists them for engine/domain/registrations.py."""

from __future__ import annotations

from sandex.engine.domain.identity import (
    account_members,
    accounts,
    identities,
    identity_documents,
    institution_members,
)
from sandex.engine.kernel.registry import Registration

REGISTRATIONS: tuple[Registration, ...] = (
    identities.REGISTRATION,
    identity_documents.REGISTRATION,
    institution_members.REGISTRATION,
    accounts.REGISTRATION,
    account_members.REGISTRATION,
)
