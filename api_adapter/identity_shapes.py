"""The answers of the identity and account operations, as the whole reference document
(paxos-openapi.json) types them: written out from its schemas, with sandex's names where
the reference's would clash with another operation's (PersonDetails of a beneficiary).
They document; they do not serialize (see response_shapes.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from sandex.api_adapter.identity_bodies import DocumentType, Status
from sandex.api_adapter.identity_vocabulary import (
    AccountMemberRole,
    AccountType,
    CipIdType,
    CustomerRegions,
    EmploymentStatus,
    EstimatedNetWorth,
    EstimatedYearlyIncome,
    ExpectedTransferValue,
    GovtIdType,
    InstitutionRole,
    InstitutionSubType,
    InstitutionType,
    MerchantFundingSource,
    PassthroughVerificationFields,
    PassthroughVerifierType,
    PurposeOfAccount,
    RegulationStatus,
    SourceOfFunds,
    SourceOfWealth,
    TinVerificationStatus,
    TradingType,
    VerifierType,
)
from sandex.api_adapter.request_bodies import ADDRESS_PATTERN
from sandex.api_adapter.response_shapes import Shape, Time

# The reference's free text pattern, and its date-times (sandex's Time: RFC 3339).
Text = Annotated[str, Field(pattern=ADDRESS_PATTERN)]


class IdentityMailingAddress(Shape):
    country: Text
    address1: Text
    address2: Text | None = None
    city: Text
    province: Text
    zip_code: Text | None = None


class IdentityPersonDetails(Shape):
    id_verification_status: Status | None = None
    sanctions_verification_status: Status | None = None
    first_name: Text | None = None
    last_name: Text | None = None
    date_of_birth: Annotated[str, Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")] | None = None
    govt_id: Text | None = None
    address: IdentityMailingAddress | None = None
    phone_number: str | None = None
    email: str | None = None
    nationality: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] | None = None
    verifier_id: str | None = None
    verifier_type: VerifierType | None = None
    id_verification_url: str | None = None
    passthrough_verifier_type: PassthroughVerifierType | None = None
    passthrough_verified_at: Time | None = None
    govt_id_type: GovtIdType | None = None
    cip_id: Text | None = None
    cip_id_type: GovtIdType | None = None
    cip_id_country: str | None = None
    additional_screening_status: Status | None = None
    profession: str | None = None
    middle_name: str | None = None
    country_of_birth: str | None = None
    passthrough_verification_id: str | None = None
    passthrough_verification_status: Status | None = None
    passthrough_verification_fields: list[PassthroughVerificationFields] | None = None


class IdentityInstitutionDetails(Shape):
    sanctions_verification_status: Status | None = None
    name: Text | None = None
    business_address: IdentityMailingAddress | None = None
    phone_number: str | None = None
    email: str | None = None
    institution_type: InstitutionType | None = None
    institution_sub_type: InstitutionSubType | None = None
    cip_id: Text | None = None
    cip_id_type: CipIdType | None = None
    cip_id_country: str | None = None
    govt_registration_date: Time | None = None
    incorporation_address: IdentityMailingAddress | None = None
    regulation_status: RegulationStatus | None = None
    trading_type: TradingType | None = None
    listed_exchange: str | None = None
    ticker_symbol: str | None = None
    parent_institution_name: str | None = None
    regulator_name: str | None = None
    regulator_jurisdiction: str | None = None
    regulator_register_number: str | None = None
    document_verification_status: Status | None = None
    additional_screening_status: Status | None = None
    doing_business_as: str | None = None
    business_description: str | None = None


class InstitutionMember(Shape):
    identity_id: str | None = None
    roles: list[InstitutionRole] | None = None
    ownership: str | None = None
    position: str | None = None
    name: str | None = None
    summary_status: Status | None = None
    id: str | None = None


class IdentityTaxDetail(Shape):
    tax_payer_id: Text | None = None
    tax_payer_country: str | None = None
    tin_verification_status: TinVerificationStatus | None = None


class IdentityCustomerDueDiligence(Shape):
    aliases: list[str] | None = None
    estimated_net_worth: EstimatedNetWorth | None = None
    estimated_yearly_income: EstimatedYearlyIncome | None = None
    expected_transfer_value: ExpectedTransferValue | None = None
    source_of_wealth: SourceOfWealth | None = None
    source_of_funds: SourceOfFunds | None = None
    purpose_of_account: PurposeOfAccount | None = None
    employment_status: EmploymentStatus | None = None
    employment_industry_sector: InstitutionSubType | None = None
    industry_sector: InstitutionSubType | None = None
    has_underlying_trust_structure: bool | None = None
    has_nominee_shareholders: bool | None = None
    created_at: Time | None = None
    is_publicly_traded: bool | None = None
    merchant_funding_source: MerchantFundingSource | None = None
    customer_regions: list[CustomerRegions] | None = None


class Identity(Shape):
    id: str
    metadata: dict[str, str] | None = None
    summary_status: Status | None = None
    user_disabled: bool | None = None
    admin_disabled: bool | None = None
    person_details: IdentityPersonDetails | None = None
    type: Literal["PERSON", "INSTITUTION"] | None = None
    ref_id: str | None = None
    institution_details: IdentityInstitutionDetails | None = None
    institution_members: list[InstitutionMember] | None = None
    created_at: Time | None = None
    updated_at: Time | None = None
    tax_details: list[IdentityTaxDetail] | None = None
    tax_details_not_required: bool | None = None
    summary_tin_verification_status: TinVerificationStatus | None = None
    customer_due_diligence: IdentityCustomerDueDiligence | None = None
    is_merchant: bool | None = None
    last_kyc_refresh_date: Time | None = None


class ListIdentitiesResponse(Shape):
    next_page_cursor: str | None = None
    items: list[Identity] | None = None


class DocumentDescription(Shape):
    file_id: str | None = None
    name: str | None = None
    document_types: list[DocumentType] | None = None
    created_at: Time | None = None
    archived_at: Time | None = None


class ListIdentityDocumentsResponse(Shape):
    documents: list[DocumentDescription] | None = None
    pending_documents: list[DocumentType] | None = None


class DocumentUploadResponse(Shape):
    file_id: str | None = None
    name: str | None = None
    upload_url: str | None = None


class AddInstitutionMembersResponse(Shape):
    institution_id: str | None = None
    members: list[InstitutionMember] | None = None


class AccountMember(Shape):
    identity_id: str | None = None
    type: AccountMemberRole | None = None
    roles: list[AccountMemberRole] | None = None
    id: str | None = None


class Account(Shape):
    id: str | None = None
    identity_id: str | None = None
    description: str | None = None
    admin_disabled: bool | None = None
    user_disabled: bool | None = None
    metadata: dict[str, str] | None = None
    ref_id: str | None = None
    members: list[AccountMember] | None = None
    created_at: Time | None = None
    summary_status: Status | None = None
    updated_at: Time | None = None
    profile_id: str | None = None
    type: AccountType | None = None


class ListAccountsResponse(Shape):
    next_page_cursor: str | None = None
    items: list[Account] | None = None


class AddAccountMembersResponse(Shape):
    account_id: str | None = None
    members: list[AccountMember] | None = None


class DeleteInstitutionMemberResponse(Shape):
    """Empty: the member is removed."""


class DeleteAccountMemberResponse(Shape):
    """Empty: the member is removed."""


class SandboxSetIdentityResponse(Shape):
    """Empty: the statuses are set; GetIdentity shows the summary status they make."""
