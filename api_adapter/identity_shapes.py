"""The answers of the identity and account operations, as the whole reference document
(paxos-openapi.json) types them: written out from its schemas, with sandex's names where
the reference's would clash with another operation's (PersonDetails of a beneficiary).
They document; they do not serialize (see response_shapes.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from api_adapter.identity_bodies import DocumentType, Status
from api_adapter.request_bodies import ADDRESS_PATTERN
from api_adapter.response_shapes import Shape, Time

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
    verifier_type: Literal["PAXOS", "PASSTHROUGH", "MANUAL"] | None = None
    id_verification_url: str | None = None
    passthrough_verifier_type: (
        Literal[
            "JUMIO",
            "ALLOY",
            "LEXISNEXIS",
            "MITEK",
            "SUMSUB",
            "MICROBILT",
            "ONFIDO",
            "CUSTOMER",
            "EQUIFAX",
            "ID3_AUTHENTICATE",
            "FIS",
            "PROVE",
            "PERSONA",
            "PLAID",
        ]
        | None
    ) = None
    passthrough_verified_at: Time | None = None
    govt_id_type: (
        Literal["SSN", "ID_CARD", "ITIN", "PASSPORT", "DRIVING_LICENSE", "VISA"] | None
    ) = None
    cip_id: Text | None = None
    cip_id_type: Literal["SSN", "ID_CARD", "ITIN", "PASSPORT", "DRIVING_LICENSE", "VISA"] | None = (
        None
    )
    cip_id_country: str | None = None
    additional_screening_status: Status | None = None
    profession: str | None = None
    middle_name: str | None = None
    country_of_birth: str | None = None
    passthrough_verification_id: str | None = None
    passthrough_verification_status: Status | None = None
    passthrough_verification_fields: (
        list[Literal["FULL_LEGAL_NAME", "ADDRESS", "DATE_OF_BIRTH", "CIP_ID"]] | None
    ) = None


class IdentityInstitutionDetails(Shape):
    sanctions_verification_status: Status | None = None
    name: Text | None = None
    business_address: IdentityMailingAddress | None = None
    phone_number: str | None = None
    email: str | None = None
    institution_type: Literal["TRUST", "CORPORATION", "LLC", "PARTNERSHIP"] | None = None
    institution_sub_type: (
        Literal[
            "INVESTMENT",
            "HEDGE_FUND",
            "MONEY_SERVICE_BUSINESS",
            "STO_ISSUER",
            "PRECIOUS_METALS",
            "NON_PROFIT",
            "REGISTERED_INVESTMENT_ADVISOR",
            "AGRICULTURE_FORESTRY_FISHING_HUNTING",
            "MINING",
            "UTILITIES",
            "CONSTRUCTION",
            "MANUFACTURING",
            "WHOLESALE_TRADE",
            "RETAIL_TRADE",
            "TRANSPORTATION_WAREHOUSING",
            "INFORMATION",
            "FINANCE_INSURANCE",
            "REAL_ESTATE_RENTAL_LEASING",
            "PROFESSIONAL_SCIENTIFIC_TECHNICAL_SERVICES",
            "MANAGEMENT_OF_COMPANIES_ENTERPRISES",
            "ADMINISTRATIVE_SUPPORT_WASTE_MANAGEMENT_REMEDIATION_SERVICES",
            "EDUCATIONAL_SERVICES",
            "HEALTH_CARE_SOCIAL_ASSISTANCE",
            "ARTS_ENTERTAINMENT_RECREATION",
            "ACCOMMODATION_FOOD_SERVICES",
            "OTHER_SERVICES",
            "PUBLIC_ADMINISTRATION",
            "NOT_CLASSIFIED",
            "ADULT_ENTERTAINMENT",
            "AUCTIONS",
            "AUTOMOBILES",
            "BLOCKCHAIN",
            "CRYPTO",
            "DRUGS",
            "EXPORT_IMPORT",
            "E_COMMERCE",
            "FINANCIAL_INSTITUTION",
            "GAMBLING",
            "INSURANCE",
            "MARKET_MAKER",
            "SHELL_BANK",
            "TRAVEL_TRANSPORT",
            "WEAPONS",
        ]
        | None
    ) = None
    cip_id: Text | None = None
    cip_id_type: Literal["EIN", "SSN", "ITIN", "REGISTRATION_NUMBER"] | None = None
    cip_id_country: str | None = None
    govt_registration_date: Time | None = None
    incorporation_address: IdentityMailingAddress | None = None
    regulation_status: Literal["US_REGULATED", "INTL_REGULATED", "NON_REGULATED"] | None = None
    trading_type: Literal["PRIVATE", "PUBLIC", "PUBLICLY_TRADED_SUBSIDIARY"] | None = None
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
    roles: (
        list[
            Literal[
                "BENEFICIAL_OWNER",
                "ACCOUNT_OPENER",
                "TRUSTEE",
                "AUTHORIZED_USER",
                "GRANTOR",
                "MANAGEMENT_CONTROL_PERSON",
                "BENEFICIARY",
            ]
        ]
        | None
    ) = None
    ownership: str | None = None
    position: str | None = None
    name: str | None = None
    summary_status: Status | None = None
    id: str | None = None


class IdentityTaxDetail(Shape):
    tax_payer_id: Text | None = None
    tax_payer_country: str | None = None
    tin_verification_status: (
        Literal["TIN_VERIFICATION_PENDING", "TIN_VERIFICATION_ERROR", "TIN_VERIFICATION_VALID"]
        | None
    ) = None


class IdentityCustomerDueDiligence(Shape):
    aliases: list[str] | None = None
    estimated_net_worth: (
        Literal[
            "NET_WORTH_0_TO_100K",
            "NET_WORTH_100K_TO_500K",
            "NET_WORTH_500K_TO_1M",
            "NET_WORTH_1M_TO_2_5M",
            "NET_WORTH_2_5M_TO_5M",
            "NET_WORTH_5M_TO_7_5M",
            "NET_WORTH_7_5M_TO_10M",
            "NET_WORTH_10M_TO_25M",
            "NET_WORTH_25M_TO_50M",
            "NET_WORTH_OVER_50M",
        ]
        | None
    ) = None
    estimated_yearly_income: (
        Literal[
            "INCOME_0_TO_50K",
            "INCOME_50K_TO_100K",
            "INCOME_100K_TO_250K",
            "INCOME_250K_TO_500K",
            "INCOME_500K_TO_750K",
            "INCOME_750K_TO_1M",
            "INCOME_ABOVE_1M",
        ]
        | None
    ) = None
    expected_transfer_value: (
        Literal[
            "TRANSFER_VALUE_0_TO_25K",
            "TRANSFER_VALUE_25K_TO_50K",
            "TRANSFER_VALUE_50K_TO_100K",
            "TRANSFER_VALUE_100K_TO_250K",
            "TRANSFER_VALUE_250K_TO_500K",
            "TRANSFER_VALUE_500K_TO_750K",
            "TRANSFER_VALUE_750K_TO_1M",
            "TRANSFER_VALUE_1M_TO_2_5M",
            "TRANSFER_VALUE_2_5M_TO_5M",
            "TRANSFER_VALUE_ABOVE_5M",
        ]
        | None
    ) = None
    source_of_wealth: (
        Literal[
            "INHERITANCE",
            "INVESTMENT_GAINS",
            "BUSINESS_OWNERSHIP_DIVIDENDS",
            "EMPLOYMENT_INCOME",
            "REAL_ESTATE",
            "OTHER_SOURCE_OF_WEALTH",
        ]
        | None
    ) = None
    source_of_funds: (
        Literal[
            "SALARY_DISBURSEMENT",
            "INHERITANCE_DISTRIBUTION",
            "INVESTMENT_RETURNS",
            "BUSINESS_DIVIDENDS_PROFITS",
            "PROPERTY_SALE",
            "LOAN_DISBURSEMENT",
            "SAVINGS_ACCOUNT_WITHDRAWAL",
            "GOVERNMENT_BENEFITS",
        ]
        | None
    ) = None
    purpose_of_account: (
        Literal["INVESTMENT_TRADING", "SAVINGS", "STABLECOIN_PURCHASE_REDEMPTION"] | None
    ) = None
    employment_status: (
        Literal[
            "CONTRACTUAL",
            "FULL_TIME",
            "PART_TIME",
            "RETIRED",
            "SELF_EMPLOYED",
            "STUDENT",
            "UNEMPLOYED",
        ]
        | None
    ) = None
    employment_industry_sector: (
        Literal[
            "INVESTMENT",
            "HEDGE_FUND",
            "MONEY_SERVICE_BUSINESS",
            "STO_ISSUER",
            "PRECIOUS_METALS",
            "NON_PROFIT",
            "REGISTERED_INVESTMENT_ADVISOR",
            "AGRICULTURE_FORESTRY_FISHING_HUNTING",
            "MINING",
            "UTILITIES",
            "CONSTRUCTION",
            "MANUFACTURING",
            "WHOLESALE_TRADE",
            "RETAIL_TRADE",
            "TRANSPORTATION_WAREHOUSING",
            "INFORMATION",
            "FINANCE_INSURANCE",
            "REAL_ESTATE_RENTAL_LEASING",
            "PROFESSIONAL_SCIENTIFIC_TECHNICAL_SERVICES",
            "MANAGEMENT_OF_COMPANIES_ENTERPRISES",
            "ADMINISTRATIVE_SUPPORT_WASTE_MANAGEMENT_REMEDIATION_SERVICES",
            "EDUCATIONAL_SERVICES",
            "HEALTH_CARE_SOCIAL_ASSISTANCE",
            "ARTS_ENTERTAINMENT_RECREATION",
            "ACCOMMODATION_FOOD_SERVICES",
            "OTHER_SERVICES",
            "PUBLIC_ADMINISTRATION",
            "NOT_CLASSIFIED",
            "ADULT_ENTERTAINMENT",
            "AUCTIONS",
            "AUTOMOBILES",
            "BLOCKCHAIN",
            "CRYPTO",
            "DRUGS",
            "EXPORT_IMPORT",
            "E_COMMERCE",
            "FINANCIAL_INSTITUTION",
            "GAMBLING",
            "INSURANCE",
            "MARKET_MAKER",
            "SHELL_BANK",
            "TRAVEL_TRANSPORT",
            "WEAPONS",
        ]
        | None
    ) = None
    industry_sector: (
        Literal[
            "INVESTMENT",
            "HEDGE_FUND",
            "MONEY_SERVICE_BUSINESS",
            "STO_ISSUER",
            "PRECIOUS_METALS",
            "NON_PROFIT",
            "REGISTERED_INVESTMENT_ADVISOR",
            "AGRICULTURE_FORESTRY_FISHING_HUNTING",
            "MINING",
            "UTILITIES",
            "CONSTRUCTION",
            "MANUFACTURING",
            "WHOLESALE_TRADE",
            "RETAIL_TRADE",
            "TRANSPORTATION_WAREHOUSING",
            "INFORMATION",
            "FINANCE_INSURANCE",
            "REAL_ESTATE_RENTAL_LEASING",
            "PROFESSIONAL_SCIENTIFIC_TECHNICAL_SERVICES",
            "MANAGEMENT_OF_COMPANIES_ENTERPRISES",
            "ADMINISTRATIVE_SUPPORT_WASTE_MANAGEMENT_REMEDIATION_SERVICES",
            "EDUCATIONAL_SERVICES",
            "HEALTH_CARE_SOCIAL_ASSISTANCE",
            "ARTS_ENTERTAINMENT_RECREATION",
            "ACCOMMODATION_FOOD_SERVICES",
            "OTHER_SERVICES",
            "PUBLIC_ADMINISTRATION",
            "NOT_CLASSIFIED",
            "ADULT_ENTERTAINMENT",
            "AUCTIONS",
            "AUTOMOBILES",
            "BLOCKCHAIN",
            "CRYPTO",
            "DRUGS",
            "EXPORT_IMPORT",
            "E_COMMERCE",
            "FINANCIAL_INSTITUTION",
            "GAMBLING",
            "INSURANCE",
            "MARKET_MAKER",
            "SHELL_BANK",
            "TRAVEL_TRANSPORT",
            "WEAPONS",
        ]
        | None
    ) = None
    has_underlying_trust_structure: bool | None = None
    has_nominee_shareholders: bool | None = None
    created_at: Time | None = None
    is_publicly_traded: bool | None = None
    merchant_funding_source: (
        Literal[
            "BUSINESS_LOANS_FINANCING",
            "SALARY_SAVINGS",
            "INVESTMENT_GAINS",
            "INHERITANCE",
            "REAL_ESTATE_INCOME",
            "NON_PROFIT_SOURCES",
            "OTHER_BUSINESS_INCOME",
        ]
        | None
    ) = None
    customer_regions: (
        list[
            Literal[
                "US_CANADA",
                "MEXICO_CENTRAL_AMERICA",
                "SOUTH_AMERICA",
                "EUROPE",
                "ASIA",
                "AFRICA",
                "OCEANIA",
            ]
        ]
        | None
    ) = None


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
    summary_tin_verification_status: (
        Literal["TIN_VERIFICATION_PENDING", "TIN_VERIFICATION_ERROR", "TIN_VERIFICATION_VALID"]
        | None
    ) = None
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
    type: Literal["BENEFICIAL_OWNER", "AUTHORIZED_USER", "FINANCIAL_ADVISOR"] | None = None
    roles: list[Literal["BENEFICIAL_OWNER", "AUTHORIZED_USER", "FINANCIAL_ADVISOR"]] | None = None
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
    type: (
        Literal["BROKERAGE", "TRADITIONAL_IRA", "ROTH_IRA", "SEP_IRA", "FINANCIAL_ADVISOR"] | None
    ) = None


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
