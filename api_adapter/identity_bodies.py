"""Request bodies of the identity and account operations, as the whole reference
document (paxos-openapi.json) shapes them: its fields, enums, patterns and lengths. The
fields that only the platform sets (verification statuses, member ids) are typed as the
reference types them and refused by the engine with a 400 naming them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

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
from sandex.api_adapter.request_bodies import ADDRESS_PATTERN, Body, OptionalAddressField
from sandex.engine.domain.identity.identities import STATUSES

# The reference's free text: its pattern, at most 35 or 200 characters.
Line35 = Annotated[str, StringConstraints(pattern=ADDRESS_PATTERN, max_length=35)]
Name200 = Annotated[str, StringConstraints(pattern=ADDRESS_PATTERN, max_length=200)]
# A string the reference does not bound: bounded here as other bodies' texts are.
Free = Annotated[str, StringConstraints(max_length=1000)]
Status = Literal[STATUSES]  # type: ignore[valid-type]
DocumentType = Literal[
    "OTHER_DOCUMENTS",
    "APPLICATION",
    "ORGANIZATIONAL_DOCUMENTS",
    "CERTIFICATE_OF_GOOD_STANDING",
    "TAX_IDENTIFICATION",
    "IDENTITY_VERIFICATION",
    "PROOF_OF_RESIDENCY",
    "PROOF_OF_FUNDS",
    "SAMPLE_INVOICE",
    "OPERATING_AGREEMENT",
    "TRUST_DOCUMENTS",
    "MONEY_SERVICE_DOCUMENTS",
    "INVESTMENT_DOCUMENTS",
    "CURP",
    "AML_DOCUMENTS",
    "FUND_STRUCTURE_CHART",
    "FUND_MANAGER_REGISTRATION",
    "MEMORANDUM_OF_ASSOCIATION",
    "ORGANIZATIONAL_CHART",
    "FOUNDATION_BY_LAWS",
    "APPOINTMENT_OF_GUARDIAN_EVIDENCE",
    "LEGAL_DOMICILE_OF_BENEFICIAL_OWNERS",
    "GOVERNING_BODY_MEMBER_NAMES",
]


class IdentityMailingAddressIn(Body):
    country: Line35
    address1: Line35
    address2: OptionalAddressField = None
    city: Line35
    province: Line35
    zip_code: OptionalAddressField = None


class PersonDetailsIn(Body):
    id_verification_status: Status | None = None
    sanctions_verification_status: Status | None = None
    first_name: Name200 | None = None
    last_name: Name200 | None = None
    date_of_birth: (
        Annotated[str, StringConstraints(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")] | None
    ) = None
    govt_id: Name200 | None = None
    address: IdentityMailingAddressIn | None = None
    phone_number: Free | None = None
    email: Free | None = None
    nationality: Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")] | None = None
    verifier_id: Free | None = None
    verifier_type: VerifierType | None = None
    id_verification_url: Free | None = None
    passthrough_verifier_type: PassthroughVerifierType | None = None
    passthrough_verified_at: Free | None = None
    govt_id_type: GovtIdType | None = None
    cip_id: Name200 | None = None
    cip_id_type: GovtIdType | None = None
    cip_id_country: Free | None = None
    additional_screening_status: Status | None = None
    profession: Free | None = None
    middle_name: Annotated[str, StringConstraints(max_length=200)] | None = None
    country_of_birth: Free | None = None
    passthrough_verification_id: Free | None = None
    passthrough_verification_status: Status | None = None
    passthrough_verification_fields: list[PassthroughVerificationFields] | None = None


class InstitutionDetailsIn(Body):
    sanctions_verification_status: Status | None = None
    name: Name200 | None = None
    business_address: IdentityMailingAddressIn | None = None
    phone_number: Free | None = None
    email: Free | None = None
    institution_type: InstitutionType | None = None
    institution_sub_type: InstitutionSubType | None = None
    cip_id: Name200 | None = None
    cip_id_type: CipIdType | None = None
    cip_id_country: Free | None = None
    govt_registration_date: Free | None = None
    incorporation_address: IdentityMailingAddressIn | None = None
    regulation_status: RegulationStatus | None = None
    trading_type: TradingType | None = None
    listed_exchange: Free | None = None
    ticker_symbol: Free | None = None
    parent_institution_name: Free | None = None
    regulator_name: Free | None = None
    regulator_jurisdiction: Free | None = None
    regulator_register_number: Free | None = None
    document_verification_status: Status | None = None
    additional_screening_status: Status | None = None
    doing_business_as: Free | None = None
    business_description: Free | None = None


class InstitutionMemberIn(Body):
    identity_id: Free | None = None
    roles: list[InstitutionRole] | None = None
    ownership: Free | None = None
    position: Free | None = None
    name: Free | None = None
    summary_status: Status | None = None
    id: Free | None = None


class TaxDetailIn(Body):
    tax_payer_id: Line35 | None = None
    tax_payer_country: Free | None = None
    tin_verification_status: TinVerificationStatus | None = None


class CustomerDueDiligenceIn(Body):
    aliases: list[Free] | None = None
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
    created_at: Free | None = None
    is_publicly_traded: bool | None = None
    merchant_funding_source: MerchantFundingSource | None = None
    customer_regions: list[CustomerRegions] | None = None


class CreateIdentityRequest(Body):
    person_details: PersonDetailsIn | None = None
    metadata: dict[str, str] | None = None
    ref_id: Free | None = None
    institution_details: InstitutionDetailsIn | None = None
    institution_members: list[InstitutionMemberIn] | None = None
    tax_details: list[TaxDetailIn] | None = None
    tax_details_not_required: bool | None = None
    customer_due_diligence: CustomerDueDiligenceIn | None = None
    is_merchant: bool | None = None


class UpdateIdentityRequest(Body):
    person_details: PersonDetailsIn | None = None
    metadata: dict[str, str] | None = None
    set_user_disabled: bool | None = None
    institution_details: InstitutionDetailsIn | None = None
    ref_id: Free | None = None
    tax_details: list[TaxDetailIn] | None = None
    set_tax_details_not_required: bool | None = None
    customer_due_diligence: CustomerDueDiligenceIn | None = None
    is_merchant: bool | None = None
    last_kyc_refresh_date: Free | None = None


class DocumentUploadRequest(Body):
    name: Free
    document_types: list[DocumentType] | None = None


class AddInstitutionMembersRequest(Body):
    institution_id: Free
    members: list[InstitutionMemberIn]


class AccountMemberIn(Body):
    identity_id: Free | None = None
    type: AccountMemberRole | None = None
    roles: list[AccountMemberRole] | None = None
    id: Free | None = None


class AccountIn(Body):
    id: Free | None = None
    identity_id: Free | None = None
    description: Free | None = None
    admin_disabled: bool | None = None
    user_disabled: bool | None = None
    metadata: dict[str, str] | None = None
    ref_id: Free | None = None
    members: list[AccountMemberIn] | None = None
    created_at: Free | None = None
    summary_status: Status | None = None
    updated_at: Free | None = None
    profile_id: Free | None = None
    type: AccountType | None = None


class CreateAccountRequest(Body):
    account: AccountIn
    create_profile: bool | None = None


class UpdateAccountRequest(Body):
    account: AccountIn
    set_user_disabled: bool | None = None


class AddAccountMembersRequest(Body):
    account_id: Free
    members: list[AccountMemberIn]


class SetDisableIn(Body):
    disabled: bool | None = None


class SandboxSetIdentityStatusRequest(Body):
    id_verification_status: Status | None = None
    sanctions_verification_status: Status | None = None
    user_disabled: SetDisableIn | None = None
    admin_disabled: SetDisableIn | None = None
    document_verification_status: Status | None = None
    additional_screening_status: Status | None = None
    # sandex's own (docs/faults.md): when the statuses take effect, an RFC 3339 time of
    # the engine's clock; not given or past: at once.
    effective_at: Annotated[str, Field(max_length=64)] | None = None
