"""Filing passages carry item labels that say which section they are (a 10-Q's Part II restarts at Item 1)."""

import datetime as dt

import polars as pl

from finrag_dagster.core.evidence import filing_item, filing_passages
from finrag_dagster.core.text import stable_hash
from finrag_dagster.sources.edgar import split_filing_passages

TENQ = """UNITED STATES SECURITIES AND EXCHANGE COMMISSION Form 10-Q for the quarter of the widget company
PART I - FINANCIAL INFORMATION
Item 1. Financial Statements
Net sales were $100 million and operating income was $20 million in the quarter of the widget company.
Item 2. Management's Discussion and Analysis of Financial Condition and Results of Operations
Net sales increased 5% on higher widget volumes in every region during the quarter under review.
PART II - OTHER INFORMATION
Item 1. Legal Proceedings
The company is a defendant in an antitrust lawsuit brought by a competitor over widget pricing terms.
Item 1A. Risk Factors
Demand for widgets may fall sharply in a recession and hurt revenue in the coming quarters.
"""


def test_10q_part_ii_items_are_labelled_and_named():
    assert filing_item("10-Q", "Item 1", "II") == ("Part II Item 1", "Legal Proceedings")
    assert filing_item("10-Q", "Item 1", "I") == ("Item 1", "Financial Statements")
    assert filing_item("10-Q/A", "Item 2", None) == ("Item 2", "Management's Discussion and Analysis")
    assert filing_item("10-K", "Item 1A", "I") == ("Item 1A", "Risk Factors")
    assert filing_item("8-K", "Item 2.02", None) == ("Item 2.02", "")
    assert filing_item("10-Q", "Cover", None) == ("Cover", "")


def test_filing_passages_label_10q_sections_and_keep_their_ids():
    filings = pl.DataFrame(
        [
            {
                "accession": "0000000001-24-000001",
                "cik": 1,
                "company": "Widget Co",
                "ticker": "WID",
                "form_type": "10-Q",
                "filed_date": dt.date(2024, 5, 1),
                "public_time": dt.datetime(2024, 5, 1, 20, tzinfo=dt.timezone.utc),
                "fiscal_period": "Q1 2024",
                "items": "",
                "text": TENQ,
            }
        ]
    )
    ps = filing_passages(filings, {"WID": "Industrials"}, split_filing_passages, 160)
    by_item = dict(zip(ps["item"], ps["title"]))
    assert by_item["Part II Item 1"] == "Widget Co 10-Q Part II Item 1 Legal Proceedings (Q1 2024)"
    assert by_item["Item 1"] == "Widget Co 10-Q Item 1 Financial Statements (Q1 2024)"
    assert by_item["Part II Item 1A"].startswith("Widget Co 10-Q Part II Item 1A Risk Factors")
    assert "Item 2" in by_item
    legal = ps.filter(pl.col("item") == "Part II Item 1")
    i = ps["item"].to_list().index("Part II Item 1")
    assert legal["passage_id"][0] == "F" + stable_hash("0000000001-24-000001", "Item 1", i)  # id as before the label
