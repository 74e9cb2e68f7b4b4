"""The world's tickers: real Nasdaq-100 names and SEC CIKs, synthetic everything else.

``nasdaq_universe.csv`` (package data) lists 102 large caps with their real company names,
SEC CIKs (from SEC ``company_tickers.json``), GICS sector / sub-industry and a month-end
fiscal-year end. :func:`select_universe` takes the first ``n`` names in a sector-balanced
order (round-robin over the first ``n_sectors`` sectors of :data:`SECTOR_ORDER`, then the
remaining sectors once those run out), and adds the market proxy (QQQ, sector ``ETF``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources

SECTOR_ORDER = (
    "Information Technology",
    "Communication Services",
    "Consumer Discretionary",
    "Consumer Staples",
    "Health Care",
    "Industrials",
    "Utilities",
    "Financials",
    "Energy",
    "Real Estate",
)
MARKET_CIK = 1067839  # INVESCO QQQ TRUST, SERIES 1 (real SEC CIK)
MARKET_SECTOR = "ETF"

# GICS sub-industry -> (SIC code, SEC's SIC description). Representative codes, not each
# company's own SIC.
SIC_BY_SUB_INDUSTRY: dict[str, tuple[str, str]] = {
    "Semiconductors": ("3674", "Semiconductors & Related Devices"),
    "Semiconductor Materials & Equipment": ("3559", "Special Industry Machinery, NEC"),
    "Application Software": ("7372", "Services-Prepackaged Software"),
    "Systems Software": ("7372", "Services-Prepackaged Software"),
    "Technology Hardware, Storage & Peripherals": ("3571", "Electronic Computers"),
    "Communications Equipment": ("3576", "Computer Communications Equipment"),
    "IT Consulting & Other Services": ("7371", "Services-Computer Programming Services"),
    "Interactive Media & Services": ("7370", "Services-Computer Programming, Data Processing, Etc."),
    "Interactive Home Entertainment": ("7372", "Services-Prepackaged Software"),
    "Advertising": ("7370", "Services-Computer Programming, Data Processing, Etc."),
    "Cable & Satellite": ("4841", "Cable & Other Pay Television Services"),
    "Movies & Entertainment": ("7812", "Services-Motion Picture & Video Tape Production"),
    "Broadcasting": ("4833", "Television Broadcasting Stations"),
    "Wireless Telecommunication Services": ("4812", "Radiotelephone Communications"),
    "Broadline Retail": ("5961", "Retail-Catalog & Mail-Order Houses"),
    "Hotels, Resorts & Cruise Lines": ("7011", "Hotels & Motels"),
    "Apparel, Accessories & Luxury Goods": ("2300", "Apparel & Other Finishd Prods of Fabrics & Similar Matl"),
    "Automotive Retail": ("5531", "Retail-Auto & Home Supply Stores"),
    "Apparel Retail": ("5651", "Retail-Family Clothing Stores"),
    "Restaurants": ("5812", "Retail-Eating Places"),
    "Automobile Manufacturers": ("3711", "Motor Vehicles & Passenger Car Bodies"),
    "Consumer Staples Merchandise Retail": ("5331", "Retail-Variety Stores"),
    "Soft Drinks & Non-alcoholic Beverages": ("2086", "Bottled & Canned Soft Drinks & Carbonated Waters"),
    "Packaged Foods & Meats": ("2000", "Food and Kindred Products"),
    "Drug Retail": ("5912", "Retail-Drug Stores and Proprietary Stores"),
    "Biotechnology": ("2836", "Biological Products, (No Diagnostic Substances)"),
    "Pharmaceuticals": ("2834", "Pharmaceutical Preparations"),
    "Health Care Equipment": ("3841", "Surgical & Medical Instruments & Apparatus"),
    "Health Care Supplies": ("3841", "Surgical & Medical Instruments & Apparatus"),
    "Life Sciences Tools & Services": ("3826", "Laboratory Analytical Instruments"),
    "Human Resource & Employment Services": ("7374", "Services-Computer Processing & Data Preparation"),
    "Diversified Support Services": ("7200", "Services-Personal Services"),
    "Research & Consulting Services": ("7374", "Services-Computer Processing & Data Preparation"),
    "Rail Transportation": ("4011", "Railroads, Line-Haul Operating"),
    "Cargo Ground Transportation": ("4213", "Trucking (No Local)"),
    "Trading Companies & Distributors": ("5200", "Retail-Building Materials, Hardware, Garden Supply"),
    "Industrial Conglomerates": ("3720", "Aircraft & Parts"),
    "Construction Machinery & Heavy Transportation Equipment": ("3711", "Motor Vehicles & Passenger Car Bodies"),
    "Passenger Airlines": ("4512", "Air Transportation, Scheduled"),
    "Electric Utilities": ("4911", "Electric Services"),
    "Multi-Utilities": ("4931", "Electric & Other Services Combined"),
    "Transaction & Payment Processing Services": ("7389", "Services-Business Services, NEC"),
    "Oil & Gas Equipment & Services": ("3533", "Oil & Gas Field Machinery & Equipment"),
    "Oil & Gas Exploration & Production": ("1311", "Crude Petroleum & Natural Gas"),
    "Real Estate Services": ("6531", "Real Estate Agents & Managers (For Others)"),
}
DEFAULT_SIC = ("7370", "Services-Computer Programming, Data Processing, Etc.")


@dataclass(frozen=True)
class Company:
    """One world ticker. ``uid`` is its row in the package CSV (stable across world sizes)."""

    uid: int
    ticker: str
    company: str
    short_name: str
    sec_title: str
    cik: int
    sector: str
    sub_industry: str
    fiscal_year_end: str  # "MMDD", a month end
    sic: str
    sic_description: str

    @property
    def fye_month(self) -> int:
        return int(self.fiscal_year_end[:2])

    @property
    def is_market(self) -> bool:
        return self.sector == MARKET_SECTOR


def load_package_universe() -> list[Company]:
    """Every row of ``nasdaq_universe.csv`` in file order."""
    text = resources.files(__package__).joinpath("nasdaq_universe.csv").read_text(encoding="utf-8")
    out: list[Company] = []
    for uid, row in enumerate(csv.DictReader(text.splitlines())):
        sic, sic_desc = SIC_BY_SUB_INDUSTRY.get(row["gics_sub_industry"], DEFAULT_SIC)
        out.append(
            Company(
                uid=uid,
                ticker=row["ticker"],
                company=row["company"],
                short_name=row["short_name"],
                sec_title=row["sec_title"],
                cik=int(row["cik"]),
                sector=row["gics_sector"],
                sub_industry=row["gics_sub_industry"],
                fiscal_year_end=row["fiscal_year_end"],
                sic=sic,
                sic_description=sic_desc,
            )
        )
    return out


def balanced_order(companies: list[Company], n_sectors: int) -> list[Company]:
    """Round-robin over the first ``n_sectors`` sectors (file order within a sector), then
    the remaining sectors the same way."""
    sectors = [s for s in SECTOR_ORDER if any(c.sector == s for c in companies)]
    extra = sorted({c.sector for c in companies} - set(sectors))
    sectors += extra
    n_sectors = max(1, min(n_sectors, len(sectors)))
    out: list[Company] = []
    for group in (sectors[:n_sectors], sectors[n_sectors:]):
        queues = [[c for c in companies if c.sector == s] for s in group]
        while any(queues):
            for q in queues:
                if q:
                    out.append(q.pop(0))
    return out


def market_company(ticker: str = "QQQ") -> Company:
    return Company(
        uid=10_000,
        ticker=ticker,
        company="Invesco QQQ Trust",
        short_name="Invesco QQQ",
        sec_title="INVESCO QQQ TRUST, SERIES 1",
        cik=MARKET_CIK,
        sector=MARKET_SECTOR,
        sub_industry="Exchange Traded Fund",
        fiscal_year_end="0930",
        sic="",
        sic_description="",
    )


def select_universe(n_tickers: int, n_sectors: int, market_ticker: str = "QQQ") -> list[Company]:
    """The world's stocks (first ``n_tickers`` of the balanced order) followed by the market proxy."""
    pool = load_package_universe()
    if n_tickers < 1 or n_tickers > len(pool):
        raise ValueError(f"n_tickers must be in 1..{len(pool)}, got {n_tickers}")
    return balanced_order(pool, n_sectors)[:n_tickers] + [market_company(market_ticker)]
