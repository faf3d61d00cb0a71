"""Active ISO 4217 currency codes accepted for new expenses.

A snapshot of ISO 4217 List One (circulating currencies, as amended through 2025: XCG replaced ANG, ZWG
replaced ZWL, SLE replaced SLL; HRK and CUC are withdrawn). Fund codes (BOV, CHE, CHW, CLF, COU, MXV, USN, UYI,
UYW), precious metals (XAU, XAG, XPD, XPT), bond-market units (XBA to XBD), XDR, XSU, XUA, the testing code XTS
and "no currency" XXX are deliberately excluded: they are not what an expense is paid in.

Only writes are checked against this list. The database just requires three uppercase letters, so updating the
list is a code change with no migration, and rows written under an older list still read and filter fine.
"""

from __future__ import annotations

from typing import Literal

CurrencyCode = Literal[
    "AED", "AFN", "ALL", "AMD", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN", "BHD", "BIF",
    "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF", "CHF", "CLP", "CNY", "COP",
    "CRC", "CUP", "CVE", "CZK", "DJF", "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP",
    "GEL", "GHS", "GIP", "GMD", "GNF", "GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD",
    "IRR", "ISK", "JMD", "JOD", "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD", "KZT", "LAK",
    "LBP", "LKR", "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR",
    "MWK", "MXN", "MYR", "MZN", "NAD", "NGN", "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN", "PGK", "PHP",
    "PKR", "PLN", "PYG", "QAR", "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP",
    "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT", "TND", "TOP", "TRY", "TTD",
    "TWD", "TZS", "UAH", "UGX", "USD", "UYU", "UZS", "VED", "VES", "VND", "VUV", "WST", "XAF", "XCD", "XCG",
    "XOF", "XPF", "YER", "ZAR", "ZMW", "ZWG",
]
CURRENCY_CODES: tuple[str, ...] = CurrencyCode.__args__  # type: ignore[attr-defined]
