"""Companies named the way analysts name them resolve to their tickers; ordinary words do not."""

import datetime as dt

import pytest

from finrag_dagster.core.retrieval.names import NameIndex
from finrag_dagster.core.retrieval.query import parse_query
from finrag_dagster.sources.universe import company_aliases

# (ticker, names as a universe file gives them (Security, SEC title), CIK)
UNIVERSE = [
    ("A", ("Agilent Technologies", "AGILENT TECHNOLOGIES, INC."), 1090872),
    ("AAPL", ("Apple Inc.", "Apple Inc."), 320193),
    ("ALL", ("Allstate", "ALLSTATE CORP"), 899051),
    ("AMZN", ("Amazon", "AMAZON COM INC"), 1018724),
    ("CSCO", ("Cisco", "CISCO SYSTEMS, INC."), 858877),
    ("EBAY", ("eBay Inc.", "EBAY INC"), 1065088),
    ("GOOG", ("Alphabet Inc. (Class C)", "Alphabet Inc."), 1652044),
    ("GOOGL", ("Alphabet Inc. (Class A)", "Alphabet Inc."), 1652044),
    ("IT", ("Gartner", "GARTNER INC"), 749251),
    ("META", ("Meta Platforms", "Meta Platforms, Inc."), 1326801),
    ("MRVL", ("Marvell Technology", "Marvell Technology, Inc."), 1835632),
    ("MU", ("Micron Technology", "MICRON TECHNOLOGY INC"), 723125),
    ("NOW", ("ServiceNow", "ServiceNow, Inc."), 1373715),
    ("ON", ("ON Semiconductor", "ON SEMICONDUCTOR CORP"), 1097864),
    ("TGT", ("Target Corporation", "TARGET CORP"), 27419),
    ("TXN", ("Texas Instruments", "TEXAS INSTRUMENTS INC"), 97476),
    ("AAL", ("American Airlines Group", "American Airlines Group Inc."), 6201),
    ("COST", ("Costco", "COSTCO WHOLESALE CORP /NEW"), 909832),
    ("AEP", ("American Electric Power", "AMERICAN ELECTRIC POWER CO INC"), 4904),
    ("DLTR", ("Dollar Tree", "DOLLAR TREE, INC."), 935703),
]


@pytest.fixture(scope="module")
def names() -> NameIndex:
    aliases = {t: company_aliases(*n).split("|") for t, n, _ in UNIVERSE}
    return NameIndex.from_aliases(aliases, {t: c for t, _, c in UNIVERSE})


@pytest.mark.parametrize(
    "text, want",
    [
        ("Compare eBay and Marvell revenue growth", ["EBAY", "MRVL"]),
        ("Marvell's third quarter", ["MRVL"]),
        ("marvell data center revenue", ["MRVL"]),
        ("Micron memory pricing", ["MU"]),
        ("Google ad revenue in 2021", ["GOOG", "GOOGL"]),
        ("Alphabet's cloud margin", ["GOOG", "GOOGL"]),
        ("Facebook user growth before the rename", ["META"]),
        ("What did Meta say about capex?", ["META"]),
        ("Cisco and Apple guidance", ["CSCO", "AAPL"]),
        ("Apple's services revenue", ["AAPL"]),
        ("Target raised its outlook", ["TGT"]),
        ("Amazon AWS growth", ["AMZN"]),
        ("ON Semiconductor silicon carbide", ["ON"]),
        ("$ON guidance for Q3", ["ON"]),
        ("guidance from NASDAQ: NOW", ["NOW"]),
        ("Intel vs (IT) consulting", ["IT"]),
        ("American Airlines fuel costs", ["AAL"]),
        ("american electric power rate case", ["AEP"]),
        ("Texas Instruments analog demand", ["TXN"]),
        ("NVDA and AAPL", ["AAPL"]),  # NVDA is not in this universe
        ("COST gross margin Q3 2019", ["COST"]),  # an upper-case symbol that is a word, but not a function word
        ("Costco membership fees", ["COST"]),
        ("Family Dollar store recall", ["DLTR"]),  # a segment's brand names its parent
        ("Dollar Tree raises its price point", ["DLTR"]),
    ],
)
def test_names_as_people_say_them(names, text, want):
    assert names.resolve(text)[0] == want


@pytest.mark.parametrize(
    "text",
    [
        "Apple pie sales at grocers",
        "the Big Apple office market",
        "apple orchards and cider prices",
        "what is the price target for semiconductors",
        "inventory target for retailers",
        "A new chip from a startup",
        "the impact of tariffs ON margins",
        "ALL airlines cut capacity",
        "NOW is the time to buy",
        "Is IT spending rising?",
        "the Amazon river basin drought",
        "american consumers and texas weather",
        "meta-analysis of earnings surprises",
        "dollar strength and oil",
        "cost of revenue and FAST growth",
    ],
)
def test_ordinary_words_are_not_tickers(names, text):
    assert names.resolve(text) == ([], [])


def test_a_comparison_counts_companies_not_share_classes(names):
    q = parse_query("Google cloud revenue growth", names, dt.date(2023, 1, 31))
    assert q.tickers == ["GOOG", "GOOGL"] and len(q.companies) == 1 and not q.is_comparison
    q = parse_query("Compare eBay and Marvell revenue growth", names, dt.date(2023, 1, 31))
    assert q.tickers == ["EBAY", "MRVL"] and q.is_comparison and q.query_type == "comparison"


def test_a_first_word_shared_by_two_companies_names_neither(names):
    assert names.resolve("American earnings")[0] == []  # American Airlines or American Electric Power?
    assert "marvell" in next(c for c in names.companies if c.tickers == ["MRVL"]).names
