"""Request bodies of the identity and account operations, as the whole reference
document (paxos-openapi.json) shapes them: its fields, enums, patterns and lengths. The
fields that only the platform sets (verification statuses, member ids) are typed as the
reference types them and refused by the engine with a 400 naming them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import StringConstraints

from api_adapter.request_bodies import ADDRESS_PATTERN, Body

# The reference's free text: its pattern, at most 35 or 200 characters.
Line35 = Annotated[str, StringConstraints(pattern=ADDRESS_PATTERN, max_length=35)]
Name200 = Annotated[str, StringConstraints(pattern=ADDRESS_PATTERN, max_length=200)]
# A string the reference does not bound: bounded here as other bodies' texts are.
Free = Annotated[str, StringConstraints(max_length=1000)]
Status = Literal["PENDING", "ERROR", "APPROVED", "DENIED", "DISABLED"]
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
    address2: Line35 | None = None
    city: Line35
    province: Line35
    zip_code: Line35 | None = None


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
    verifier_type: Literal["PAXOS", "PASSTHROUGH", "MANUAL"] | None = None
    id_verification_url: Free | None = None
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
    passthrough_verified_at: Free | None = None
    govt_id_type: (
        Literal["SSN", "ID_CARD", "ITIN", "PASSPORT", "DRIVING_LICENSE", "VISA"] | None
    ) = None
    cip_id: Name200 | None = None
    cip_id_type: Literal["SSN", "ID_CARD", "ITIN", "PASSPORT", "DRIVING_LICENSE", "VISA"] | None = (
        None
    )
    cip_id_country: Free | None = None
    additional_screening_status: Status | None = None
    profession: Free | None = None
    middle_name: Annotated[str, StringConstraints(max_length=200)] | None = None
    country_of_birth: Free | None = None
    passthrough_verification_id: Free | None = None
    passthrough_verification_status: Status | None = None
    passthrough_verification_fields: (
        list[Literal["FULL_LEGAL_NAME", "ADDRESS", "DATE_OF_BIRTH", "CIP_ID"]] | None
    ) = None


class InstitutionDetailsIn(Body):
    sanctions_verification_status: Status | None = None
    name: Name200 | None = None
    business_address: IdentityMailingAddressIn | None = None
    phone_number: Free | None = None
    email: Free | None = None
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
    cip_id: Name200 | None = None
    cip_id_type: Literal["EIN", "SSN", "ITIN", "REGISTRATION_NUMBER"] | None = None
    cip_id_country: Free | None = None
    govt_registration_date: Free | None = None
    incorporation_address: IdentityMailingAddressIn | None = None
    regulation_status: Literal["US_REGULATED", "INTL_REGULATED", "NON_REGULATED"] | None = None
    trading_type: Literal["PRIVATE", "PUBLIC", "PUBLICLY_TRADED_SUBSIDIARY"] | None = None
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
    ownership: Free | None = None
    position: Free | None = None
    name: Free | None = None
    summary_status: Status | None = None
    id: Free | None = None


class TaxDetailIn(Body):
    tax_payer_id: Line35 | None = None
    tax_payer_country: Free | None = None
    tin_verification_status: (
        Literal["TIN_VERIFICATION_PENDING", "TIN_VERIFICATION_ERROR", "TIN_VERIFICATION_VALID"]
        | None
    ) = None


class CustomerDueDiligenceIn(Body):
    aliases: list[Free] | None = None
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
    created_at: Free | None = None
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
    type: Literal["BENEFICIAL_OWNER", "AUTHORIZED_USER", "FINANCIAL_ADVISOR"] | None = None
    roles: list[Literal["BENEFICIAL_OWNER", "AUTHORIZED_USER", "FINANCIAL_ADVISOR"]] | None = None
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
    type: (
        Literal["BROKERAGE", "TRADITIONAL_IRA", "ROTH_IRA", "SEP_IRA", "FINANCIAL_ADVISOR"] | None
    ) = None


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
