"""Synthetic EDGAR filings: company fundamentals, 8-K / 10-Q / 10-K texts in the
sec-edgar-downloader ``full-submission.txt`` layout, and SEC submissions-API JSON.

The SGML header copies the real sample's layout byte for byte (tabs included);
``<ACCEPTANCE-DATETIME>`` is US/Eastern wall clock, the JSON ``acceptanceDateTime`` is UTC.
Every number and sentence is synthetic.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field

import numpy as np

from ...core.events import CAPITAL, EARNINGS, LEGAL, MANAGEMENT
from . import text as T
from .clock import MIN, WorldDays, et_date, et_ns, sec_acceptance_header, sec_acceptance_json, to_et
from .events import Event, FiscalQuarter, fiscal_quarter_of, month_end, quarter_ends
from .market import S_FILINGS, S_FUND, rng_for
from .universe import Company

ITEM_NAMES = {
    "1.01": "Entry into a Material Definitive Agreement",
    "2.01": "Completion of Acquisition or Disposition of Assets",
    "2.02": "Results of Operations and Financial Condition",
    "2.03": "Creation of a Direct Financial Obligation or an Obligation under an Off-Balance Sheet Arrangement of a Registrant",
    "5.02": "Departure of Directors or Certain Officers; Election of Directors; Appointment of Certain Officers; Compensatory Arrangements of Certain Officers",
    "7.01": "Regulation FD Disclosure",
    "8.01": "Other Events",
    "9.01": "Financial Statements and Exhibits",
}


# ------------------------------------------------------------------ fundamentals
@dataclass(frozen=True)
class QuarterFin:
    fq: FiscalQuarter
    revenue: float  # $ millions
    gross_margin: float  # %
    op_margin: float  # %
    net_income: float  # $ millions
    shares: float  # diluted, millions
    eps: float
    yoy: float  # % vs the same quarter a year earlier
    guide_revenue: float  # next quarter, $ millions
    guide_gm: float
    tone: int  # MD&A tone of the periodic filing for this quarter


def fundamentals(seed: int, c: Company, first: dt.date, last: dt.date, tones: dict[dt.date, int]) -> dict[dt.date, QuarterFin]:
    """Quarterly numbers from ``first`` to ``last`` (period ends). ``tones`` maps a period end to
    the SEC tone of its earnings release; the quarter's revenue and margin deviations lean
    that way so text and numbers agree."""
    rng = rng_for(seed, S_FUND, c.uid)
    r0 = float(np.exp(rng.uniform(np.log(1500.0), np.log(60000.0))))
    growth = float(rng.uniform(-0.02, 0.25))
    season = rng.normal(0.0, 0.03, 4)
    gm0 = float(rng.uniform(35.0, 75.0))
    opex = float(rng.uniform(12.0, min(45.0, gm0 - 8.0)))
    eps0 = float(rng.uniform(0.5, 3.5))
    shares = r0 * (gm0 - opex) / 100.0 * 0.78 / eps0
    qs = quarter_ends(c, first - dt.timedelta(days=400), last + dt.timedelta(days=200))
    out: dict[dt.date, QuarterFin] = {}
    rev_by_k: dict[int, float] = {}
    gm_by_k: dict[int, float] = {}
    base_t = qs[0].end
    for k, fq in enumerate(qs):
        tone = tones.get(fq.end)
        noise = rng.normal(0.0, 0.01)
        dev = (0.035 * tone if tone is not None else 0.0) + noise
        t_years = (fq.end - base_t).days / 365.25
        rev = r0 * np.exp(np.log1p(growth) * t_years + season[fq.q - 1] + dev)
        gm = gm0 + (0.8 * tone if tone is not None else 0.0) + rng.normal(0.0, 0.5)
        om = gm - opex + (0.6 * tone if tone is not None else 0.0) + rng.normal(0.0, 0.4)
        ni = rev * om / 100.0 * 0.78
        sh = shares * (1.0 - 0.004 * k)
        rev_by_k[k], gm_by_k[k] = rev, gm
        prev = rev_by_k.get(k - 4)
        yoy = (rev / prev - 1.0) * 100.0 if prev else growth * 100.0
        nxt_t = t_years + 0.25
        nxt_season = season[fq.q % 4]
        g_rev = r0 * np.exp(np.log1p(growth) * nxt_t + nxt_season) * (1.0 + 0.02 * (tone or 0))
        g_gm = gm0 + 0.5 * (tone or 0)
        if tone is None:
            tone_p = 1 if dev > 0.012 else (-1 if dev < -0.012 else 0)
        else:
            tone_p = tone
        out[fq.end] = QuarterFin(
            fq, float(rev), float(gm), float(om), float(ni), float(sh), float(ni / sh), float(yoy), float(g_rev), float(g_gm), tone_p
        )
    return out


def money_b(millions: float) -> str:
    """$X.X billion (or $NNN million under a billion)."""
    if millions >= 1000:
        return f"${millions / 1000:.1f} billion"
    return f"${millions:.0f} million"


def money_short(millions: float) -> str:
    """$X.XB (or $NNNM)."""
    if millions >= 1000:
        return f"${millions / 1000:.1f}B"
    return f"${millions:.0f}M"


def fq_long(fq: FiscalQuarter) -> str:
    return f"{T.QUARTER_WORDS[fq.q]} quarter of fiscal {fq.fy}"


def fq_short(fq: FiscalQuarter) -> str:
    return f"fiscal Q{fq.q} {fq.fy}"


def next_fq(fq: FiscalQuarter, fye_month: int) -> FiscalQuarter:
    """The fiscal quarter after ``fq`` (period end three months later)."""
    m = fq.end.month + 3
    y = fq.end.year + (m > 12)
    return fiscal_quarter_of(month_end(y, (m - 1) % 12 + 1), fye_month)


# ------------------------------------------------------------------ filing records
@dataclass
class Filing:
    ticker: str
    cik: int
    form: str  # 8-K | 10-Q | 10-K
    accept_ns: int
    report_date: dt.date
    items: tuple[str, ...] = ()
    event_id: str | None = None
    tone: int = 0
    role: str = "periodic"
    fq: FiscalQuarter | None = None
    accession: str = ""
    filed_date: dt.date | None = None
    film: str = ""
    text: str = ""
    primary_doc: str = ""
    extra: dict = field(default_factory=dict)


def edgar_filed_date(accept_ns: int, wd: WorldDays) -> dt.date:
    """EDGAR filing date: the acceptance date, or the next business day after 17:30 ET."""
    local = to_et(accept_ns)
    day = local.date()
    if local.hour * 60 + local.minute > 17 * 60 + 30 or not wd.is_session(day):
        i = wd.index_on_or_after(day + dt.timedelta(days=1))
        if i < len(wd):
            return wd.days[i]
        return day + dt.timedelta(days=1)
    return day


def _filing_time(rng: np.random.Generator, wd: WorldDays, i: int) -> int:
    day = wd.days[i]
    if rng.random() < 0.6:
        return int(wd.closes[i]) + int(rng.integers(5, 150)) * MIN + int(rng.integers(0, 60)) * 10**9
    return et_ns(day, int(rng.integers(6 * 3600, 8 * 3600 + 30 * 60)))


def periodic_filings(seed: int, c: Company, wd: WorldDays, fin: dict[dt.date, QuarterFin], events: list[Event]) -> list[Filing]:
    """10-Q for fiscal Q1-Q3 and 10-K for Q4, accepted inside the world span."""
    rng = rng_for(seed, S_FILINGS, c.uid)
    release = {e.fq.end: e.event_ns for e in events if e.quarterly and e.fq is not None}
    out: list[Filing] = []
    for end, qf in fin.items():
        if end in release:
            base = et_date(release[end]) + dt.timedelta(days=int(rng.integers(0, 8)))
        else:
            base = end + dt.timedelta(days=int(rng.integers(25, 38)))
        if qf.fq.q == 4:
            base = max(base, end + dt.timedelta(days=int(rng.integers(40, 58))))
        i = wd.index_on_or_after(base)
        if base < wd.days[0] or i >= len(wd):
            continue
        t = _filing_time(rng, wd, i)
        if end in release and t <= release[end]:
            t = release[end] + int(rng.integers(30, 120)) * MIN
            if to_et(t).hour >= 21:
                continue
        if t < int(wd.opens[0]) or t > int(wd.closes[-1]):
            continue
        form = "10-K" if qf.fq.q == 4 else "10-Q"
        out.append(Filing(c.ticker, c.cik, form, int(t), end, (), None, qf.tone, "periodic", qf.fq))
    return out


def event_items(ev: Event, title: str, rng: np.random.Generator) -> tuple[str, ...]:
    """8-K items for an event, from its type and the wording of its anchor."""
    if ev.event_type == EARNINGS:
        return ("2.02", "9.01")
    if ev.event_type == CAPITAL:
        if "Completes Acquisition" in title:
            return ("2.01", "9.01")
        if any(w in title for w in ("Notes", "Debt", "Credit Facility", "Refinancing", "Offering")):
            return ("1.01", "2.03", "9.01")
        if any(w in title for w in ("Acquire", "Merger", "Takeover", "Acquisition", "Stake", "Investment")):
            return ("1.01", "9.01")
        return ("8.01",)
    if ev.event_type == MANAGEMENT:
        if any(w in title for w in ("CFO", "CEO", "COO", "Appoints", "Names", "Board", "Resigns", "Departure", "Officer")):
            return ("5.02",)
        return ("8.01",) if rng.random() < 0.6 else ("7.01", "9.01")
    if ev.event_type == LEGAL:
        return ("8.01",) if rng.random() < 0.7 else ("7.01", "9.01")
    return ("7.01", "9.01") if rng.random() < 0.5 else ("8.01",)


# ------------------------------------------------------------------ text
SEC_TONE = {
    EARNINGS: {
        1: "Management raised the outlook for the {nxt} and expects improved demand and further margin progress.",
        -1: "Management lowered the outlook for the {nxt}, citing weak demand and adverse cost trends.",
        0: "Management reaffirmed the outlook for the {nxt}.",
    },
    LEGAL: {
        1: "The Company believes the resolution is favorable and will benefit its operations.",
        -1: "The Company believes the matter could have an adverse effect on its results and may result in penalties and delays.",
        0: "The Company does not expect the matter to be material to its results.",
    },
    CAPITAL: {
        1: "The Company expects the transaction to strengthen its balance sheet and achieve efficiencies.",
        -1: "The Company expects the transaction to reduce cash flow and may face adverse financing conditions and losses.",
        0: "The transaction is expected to close in the ordinary course.",
    },
    MANAGEMENT: {
        1: "The Company expects the change to strengthen execution and support progress on its plans.",
        -1: "The Company expects the change to cause disruption and delays in the near term.",
        0: "The change applies from the date of this report.",
    },
    "Other/Mixed": {
        1: "The Company described the update as positive for its long-term plans.",
        -1: "The Company described the update as a setback for its near-term plans.",
        0: "The Company provided the update to investors.",
    },
}
CEO_QUOTE = {
    1: '"We delivered excellent results and achieved record revenue, and we see greater opportunities ahead," said {exec}, chief executive officer.',
    -1: '"Results were disappointing, demand remained weak, and we face difficult conditions," said {exec}, chief executive officer.',
    0: '"Results were consistent with our plan for the quarter," said {exec}, chief executive officer.',
}
MDNA_TONE = {
    1: "Results reflected improved demand and excellent execution across our business.",
    -1: "Results reflected weak demand and challenging conditions in several markets.",
    0: "Results reflected demand trends consistent with the prior quarter.",
}
RISK_FACTORS = (
    "Investing in our securities involves risks. Demand for our products can change quickly, and our results rely on the timing of customer orders.",
    "We rely on third parties to manufacture and deliver some of our products, and changes at those suppliers can affect our operations.",
    "Changes in laws and regulations in the markets where we operate may increase our costs.",
    "We face competition from large and small companies, and new entrants may offer similar products at lower prices.",
)
FLS = (
    "This news release contains forward-looking statements, including statements about the outlook "
    "for the next quarter, which are based on current expectations and involve risks and uncertainties. "
    "Actual results may differ. All figures in this document are synthetic."
)


def _date_words(d: dt.date) -> str:
    return d.strftime("%B %d, %Y").replace(" 0", " ")


def _cover(form: str, c: Company, period: str, file_no: str) -> list[str]:
    kind = {
        "10-Q": "QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
        "10-K": "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
        "8-K": "CURRENT REPORT Pursuant to Section 13 or 15(d) of the Securities Exchange Act of 1934",
    }[form]
    return [
        "UNITED STATES",
        "SECURITIES AND EXCHANGE COMMISSION",
        "Washington, D.C. 20549",
        "",
        f"FORM {form}",
        "",
        kind,
        period,
        f"Commission File Number: {file_no}",
        "",
        c.company,
        f"(Exact name of registrant as specified in its charter; synthetic data, CIK {c.cik})",
        "",
    ]


def file_number(c: Company) -> str:
    return f"001-{30000 + (c.uid * 397) % 9000:05d}"


def income_table(c: Company, qf: QuarterFin, prev: QuarterFin | None, annual: bool = False, rows4=None) -> list[str]:
    """A small condensed income statement (in millions, except per share)."""
    cur = rows4 or [qf]
    rev = sum(q.revenue for q in cur)
    gp = sum(q.revenue * q.gross_margin / 100 for q in cur)
    op = sum(q.revenue * q.op_margin / 100 for q in cur)
    ni = sum(q.net_income for q in cur)
    eps = sum(q.eps for q in cur)
    head = "Twelve Months Ended" if annual else "Three Months Ended"
    lines = [
        "CONDENSED CONSOLIDATED STATEMENTS OF INCOME (Unaudited)" if not annual else "CONSOLIDATED STATEMENTS OF INCOME",
        "(In millions, except per share amounts)",
        f"{head} {_date_words(qf.fq.end)}",
        f"Revenue                          $ {rev:,.0f}",
        f"Cost of revenue                    {rev - gp:,.0f}",
        f"Gross margin                       {gp:,.0f}",
        f"Operating expenses                 {gp - op:,.0f}",
        f"Operating income                   {op:,.0f}",
        f"Net income                       $ {ni:,.0f}",
        f"Diluted net income per share     $ {eps:.2f}",
        f"Diluted shares outstanding         {qf.shares:,.0f}",
    ]
    return lines


@dataclass(frozen=True)
class _Periodic:
    """What a 10-Q or 10-K is written from: the company, the filing, its quarter, the same quarter a
    year before (None in the first year), the MD&A's quarter sentences and the legal proceedings."""

    c: Company
    f: Filing
    qf: QuarterFin
    prev: QuarterFin | None
    num: list[str]
    legal: list[str]


def _quarter_sentences(c: Company, qf: QuarterFin, prev: QuarterFin | None) -> list[str]:
    """The MD&A's sentences on the quarter: revenue and its change, margins, EPS, tone, the outlook."""
    nfq = next_fq(qf.fq, c.fye_month)
    yoy_word = "an increase" if qf.yoy >= 0 else "a decrease"
    prev_txt = f" from {money_b(prev.revenue)} a year ago" if prev else ""
    return [
        f"Revenue for the {fq_long(qf.fq)} was {money_b(qf.revenue)}, {yoy_word} of {abs(qf.yoy):.1f}%{prev_txt}.",
        f"Gross margin was {qf.gross_margin:.1f}%" + (f" compared with {prev.gross_margin:.1f}% a year ago." if prev else "."),
        f"Operating margin was {qf.op_margin:.1f}%, and diluted earnings per share were ${qf.eps:.2f}.",
        MDNA_TONE[qf.tone],
        f"Outlook: For the {fq_long(nfq)}, we expect revenue of approximately {money_b(qf.guide_revenue)} "
        f"and gross margin of approximately {qf.guide_gm:.1f}%.",
    ]


def _body_10q(p: _Periodic) -> list[str]:
    """A 10-Q's cover and items (financial statements, MD&A, market risk, controls, legal, risk factors, exhibits)."""
    c, f, qf = p.c, p.f, p.qf
    lines = _cover("10-Q", c, f"For the quarterly period ended {_date_words(f.report_date)}", file_number(c))
    lines += ["PART I - FINANCIAL INFORMATION", "", "Item 1. Financial Statements", ""]
    lines += income_table(c, qf, p.prev) + [""]
    lines += ["Item 2. Management's Discussion and Analysis of Financial Condition and Results of Operations", ""]
    lines += [f"The following discussion covers the {fq_long(qf.fq)} ({qf.fq.label})."] + p.num + [""]
    lines += [
        "Item 3. Quantitative and Qualitative Disclosures About Market Risk",
        "",
        "There have been no significant changes in our market risk exposures during the quarter.",
        "",
    ]
    lines += ["Item 4. Controls and Procedures", "", "Management evaluated our controls and procedures as of the end of the period.", ""]
    lines += ["PART II - OTHER INFORMATION", "", "Item 1. Legal Proceedings", ""] + p.legal + [""]
    lines += ["Item 1A. Risk Factors", ""] + list(RISK_FACTORS[:2]) + [""]
    lines += ["Item 6. Exhibits", "", "31.1 Certification of the Chief Executive Officer.", ""]
    return lines


def _fiscal_year(fin: dict[dt.date, QuarterFin], ends: list[dt.date], k: int, qf: QuarterFin) -> tuple[list[QuarterFin], list[str]]:
    """(the four quarters of the fiscal year ending at quarter ``k``, the 10-K MD&A's sentences on the year)."""
    rows4 = [fin[e] for e in ends[max(0, k - 3) : k + 1]]
    fy_rev = sum(q.revenue for q in rows4)
    prev4 = [fin[e] for e in ends[max(0, k - 7) : max(0, k - 3)]] if k >= 7 else []
    fy_prev = sum(q.revenue for q in prev4) if len(prev4) == 4 else None
    fy_gm = sum(q.revenue * q.gross_margin for q in rows4) / fy_rev
    fy_om = sum(q.revenue * q.op_margin for q in rows4) / fy_rev
    fy_eps = sum(q.eps for q in rows4)
    chg = (
        f", {'an increase' if fy_rev >= fy_prev else 'a decrease'} of {abs(fy_rev / fy_prev - 1) * 100:.1f}% from fiscal {qf.fq.fy - 1}"
        if fy_prev
        else ""
    )
    return rows4, [
        f"Revenue for fiscal {qf.fq.fy} was {money_b(fy_rev)}{chg}.",
        f"Gross margin for fiscal {qf.fq.fy} was {fy_gm:.1f}% and operating margin was {fy_om:.1f}%.",
        f"Diluted earnings per share for fiscal {qf.fq.fy} were ${fy_eps:.2f}.",
    ]


def _body_10k(p: _Periodic, rows4: list[QuarterFin], year: list[str]) -> list[str]:
    """A 10-K's cover and items (business, risk factors, properties, legal, market, MD&A, statements, controls)."""
    c, f, qf = p.c, p.f, p.qf
    lines = _cover("10-K", c, f"For the fiscal year ended {_date_words(f.report_date)}", file_number(c))
    lines += [
        "PART I",
        "",
        "Item 1. Business",
        "",
        f"{c.company} operates in the {c.sub_industry} industry within the {c.sector} sector. This description and all figures in this report are synthetic.",
        "",
    ]
    lines += ["Item 1A. Risk Factors", ""] + list(RISK_FACTORS) + [""]
    lines += ["Item 2. Properties", "", "Our headquarters and main offices are leased.", ""]
    lines += ["Item 3. Legal Proceedings", ""] + p.legal + [""]
    lines += ["Item 4. Mine Safety Disclosures", "", "Not applicable.", ""]
    lines += [
        "PART II",
        "",
        "Item 5. Market for Registrant's Common Equity, Related Stockholder Matters and Issuer Purchases of Equity Securities",
        "",
        f"Our common stock trades on the Nasdaq Global Select Market under the symbol {c.ticker}.",
        "",
    ]
    lines += ["Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations", ""]
    lines += year + p.num + [""]
    lines += [
        "Item 7A. Quantitative and Qualitative Disclosures About Market Risk",
        "",
        "Our market risk relates mainly to interest rates and foreign currency.",
        "",
    ]
    lines += ["Item 8. Financial Statements and Supplementary Data", ""] + income_table(c, qf, p.prev, annual=True, rows4=rows4) + [""]
    lines += ["Item 9A. Controls and Procedures", "", "Management assessed our internal control over financial reporting.", ""]
    return lines


def render_periodic(c: Company, f: Filing, fin: dict[dt.date, QuarterFin], legal_notes: list[str], exec_name: str) -> str:
    """The text of a 10-Q or 10-K: cover, items and signatures."""
    qf = fin[f.report_date]
    ends = sorted(fin)
    k = ends.index(f.report_date)
    prev = fin[ends[k - 4]] if k >= 4 else None
    legal = ["From time to time we are involved in legal proceedings arising in the ordinary course of business."]
    legal += legal_notes or ["We are not currently a party to any proceeding we expect to be material."]
    p = _Periodic(c=c, f=f, qf=qf, prev=prev, num=_quarter_sentences(c, qf, prev), legal=legal)
    if f.form == "10-Q":
        lines = _body_10q(p)
    else:
        lines = _body_10k(p, *_fiscal_year(fin, ends, k, qf))
    lines += ["SIGNATURES", "", f"{c.company}", f"By: {exec_name}, Chief Executive Officer", ""]
    return "\n".join(lines)


def press_release_echo(title: str) -> str:
    """The anchor headline as the company's own release words it: the same entity and event words,
    without any word (or two-word phrase) that carries sentiment for the LM lexicon or the embedded
    reader's finance rules, so the 8-K's tone stays its own planted draw (around d_long)."""
    from ...core.reader.embedded import tone  # the strictest sentiment view in the repo

    words = [w for w in title.replace(";", " ;").replace(",", " ,").split() if tone(w.strip(";,:.'\"")) == (0.0, 0)]
    changed = True
    while changed:  # drop phrases ("raises guidance") whose words are neutral one by one
        changed = False
        for i in range(len(words) - 1):
            if tone(f"{words[i]} {words[i + 1]}")[1]:
                del words[i : i + 2]
                changed = True
                break
    out = " ".join(words).replace(" ;", ";").replace(" ,", ",")
    out = " ".join(out.split()).strip(" ;,:-")
    while ";;" in out or ",," in out or ";," in out or ",;" in out:
        out = out.replace(";;", ";").replace(",,", ",").replace(";,", ";").replace(",;", ";")
    if tone(out)[1] or len(out.split()) < 2:
        return ""
    return out


@dataclass(frozen=True)
class EightK:
    """What an event's 8-K and its EX-99.1 are written from (the signers, the day reported, the subject, the quarter, the echo)."""

    c: Company
    f: Filing
    ev: Event
    exec_name: str
    cfo_name: str
    event_day: dt.date
    subject: str
    fq_info: dict
    echo: str = ""


def render_8k_body(k: EightK) -> list[tuple[str, str, str]]:
    """The 8-K's documents as (type, filename, text): the 8-K itself, plus EX-99.1 when item 9.01.
    ``k.echo`` (``press_release_echo`` of the anchor headline, or empty) is restated in each item and
    heads the exhibit."""
    c, f, ev, cfo_name, event_day, subject, fq_info, echo = k.c, k.f, k.ev, k.cfo_name, k.event_day, k.subject, k.fq_info, k.echo
    nxt = fq_info.get("next_long", "next quarter")
    tone_line = SEC_TONE[ev.event_type][f.tone].format(nxt=nxt)
    day_words = _date_words(event_day)
    update = f"On {day_words}, the Company provided an update on its {subject}."
    if echo:
        update = f"On {day_words}, the Company announced: {echo}. The announcement is an update on its {subject}."
    lines = _cover("8-K", c, f"Date of Report (Date of earliest event reported): {day_words}", file_number(c))
    for item in f.items:
        lines.append(f"Item {item} {ITEM_NAMES[item]}.")
        lines.append("")
        if item == "2.02":
            what = "announcing its financial results" if ev.quarterly else "updating its outlook"
            lines.append(
                f'On {day_words}, {c.company} (the "Company") issued a news release {what} '
                f"for the {fq_info['long']}. A copy of the news release is furnished as Exhibit 99.1 to this Current Report on Form 8-K."
            )
            if echo:
                lines.append(f"The news release is headed: {echo}.")
            lines.append(
                'This Item 2.02 and Exhibit 99.1 shall not be deemed "filed" for purposes of Section 18 of the Securities Exchange Act of 1934.'
            )
        elif item == "9.01":
            lines += ["(d) Exhibits.", "Exhibit No. Description", f"99.1 News release issued by {c.company} on {day_words}."]
        elif item == "5.02":
            lines.append(update)
            lines.append(tone_line)
        elif item == "7.01":
            lines.append(f"On {day_words}, the Company issued the news release furnished as Exhibit 99.1 regarding its {subject}.")
            if echo:
                lines.append(f"The news release is headed: {echo}.")
        else:
            lines.append(update)
            lines.append(tone_line)
        lines.append("")
    lines += ["SIGNATURES", "", c.company, f"By: {cfo_name}, Chief Financial Officer", f"Date: {day_words}", ""]
    docs = [("8-K", f.primary_doc, "\n".join(lines))]
    if "9.01" in f.items:
        docs.append(("EX-99.1", f.primary_doc.replace(".htm", "ex991.htm"), render_ex991(k, tone_line)))
    return docs


def render_ex991(k: EightK, tone_line: str) -> str:
    """The EX-99.1 news release of an 8-K: results and outlook for a quarterly event, else the update; ``tone_line`` closes it."""
    c, f, ev, exec_name, subject, fq_info, echo = k.c, k.f, k.ev, k.exec_name, k.subject, k.fq_info, k.echo
    day_words = _date_words(k.event_day)
    if "qf" in fq_info and ev.quarterly:
        qf: QuarterFin = fq_info["qf"]
        head = f"{c.company.upper()} REPORTS {T.QUARTER_WORDS[qf.fq.q].upper()} QUARTER FISCAL {qf.fq.fy} RESULTS"
        word = "increased" if qf.yoy >= 0 else "decreased"
        body = [
            head,
            *([echo, ""] if echo else [""]),
            f"{day_words} -- {c.company} (Nasdaq: {c.ticker}) today reported results for the {fq_info['long']}.",
            f"Revenue was {money_b(qf.revenue)} ({money_short(qf.revenue)}), which {word} {abs(qf.yoy):.1f}% from a year ago.",
            f"Gross margin was {qf.gross_margin:.1f}% and operating margin was {qf.op_margin:.1f}%.",
            f"Diluted earnings per share were ${qf.eps:.2f}.",
            CEO_QUOTE[f.tone].format(exec=exec_name),
            "",
            "Outlook",
            f"For the {fq_info['next_long']}, {c.company} expects revenue of {money_b(qf.guide_revenue)}, plus or minus 2%, "
            f"and gross margin of {qf.guide_gm:.1f}%.",
            tone_line,
        ]
    else:
        head = echo.upper() if echo else f"{c.company.upper()} ANNOUNCEMENT"
        body = [head, "", f"{day_words} -- {c.company} (Nasdaq: {c.ticker}) today provided an update on its {subject}.", tone_line]
    body += ["", "Forward-Looking Statements", FLS, ""]
    return "\n".join(body)


def sgml_header(c: Company, f: Filing, n_docs: int) -> str:
    """The SEC-HEADER block in the real sample's layout (tabs and all)."""
    filed = f.filed_date.strftime("%Y%m%d")
    change = to_et(f.accept_ns).strftime("%Y%m%d")
    lines = [
        f"<SEC-DOCUMENT>{f.accession}.txt : {filed}",
        f"<SEC-HEADER>{f.accession}.hdr.sgml : {filed}",
        f"<ACCEPTANCE-DATETIME>{sec_acceptance_header(f.accept_ns)}",
        f"ACCESSION NUMBER:\t\t{f.accession}",
        f"CONFORMED SUBMISSION TYPE:\t{f.form}",
        f"PUBLIC DOCUMENT COUNT:\t\t{n_docs}",
        f"CONFORMED PERIOD OF REPORT:\t{f.report_date.strftime('%Y%m%d')}",
    ]
    for item in f.items:
        lines.append(f"ITEM INFORMATION:\t\t{ITEM_NAMES[item]}")
    lines += [
        f"FILED AS OF DATE:\t\t{filed}",
        f"DATE AS OF CHANGE:\t\t{change}",
        "",
        "FILER:",
        "",
        "\tCOMPANY DATA:\t",
        f"\t\tCOMPANY CONFORMED NAME:\t\t\t{c.sec_title}",
        f"\t\tCENTRAL INDEX KEY:\t\t\t{c.cik:010d}",
        f"\t\tSTANDARD INDUSTRIAL CLASSIFICATION:\t{c.sic_description.upper()} [{c.sic}]",
        f"\t\tIRS NUMBER:\t\t\t\t{irs_number(c)}",
        "\t\tSTATE OF INCORPORATION:\t\t\tDE",
        f"\t\tFISCAL YEAR END:\t\t\t{c.fiscal_year_end}",
        "",
        "\tFILING VALUES:",
        f"\t\tFORM TYPE:\t\t{f.form}",
        "\t\tSEC ACT:\t\t1934 Act",
        f"\t\tSEC FILE NUMBER:\t{file_number(c)}",
        f"\t\tFILM NUMBER:\t\t{f.film}",
        "",
        "\tBUSINESS ADDRESS:\t",
        f"\t\tSTREET 1:\t\t{street(c)}",
        f"\t\tCITY:\t\t\t{T.CITIES[c.uid % len(T.CITIES)].upper()}",
        "\t\tSTATE:\t\t\tXX",
        f"\t\tZIP:\t\t\t{10000 + (c.uid * 7919) % 89999:05d}",
        "\t\tBUSINESS PHONE:\t\t(555) 010-0000",
        "",
        "\tMAIL ADDRESS:\t",
        f"\t\tSTREET 1:\t\t{street(c)}",
        f"\t\tCITY:\t\t\t{T.CITIES[c.uid % len(T.CITIES)].upper()}",
        "\t\tSTATE:\t\t\tXX",
        f"\t\tZIP:\t\t\t{10000 + (c.uid * 7919) % 89999:05d}",
        "</SEC-HEADER>",
    ]
    return "\n".join(lines)


def irs_number(c: Company) -> str:
    return f"{(c.cik * 2654435761) % 900000000 + 100000000:09d}"


def street(c: Company) -> str:
    return f"{100 + c.uid * 17 % 900} EXAMPLE PARKWAY"


def full_submission(c: Company, f: Filing, docs: list[tuple[str, str, str]]) -> str:
    """The whole ``full-submission.txt``: header, then every <DOCUMENT>, then </SEC-DOCUMENT>."""
    parts = [sgml_header(c, f, len(docs))]
    for seq, (typ, fname, body) in enumerate(docs, start=1):
        desc = typ if typ != "EX-99.1" else "EX-99.1"
        parts.append(f"<DOCUMENT>\n<TYPE>{typ}\n<SEQUENCE>{seq}\n<FILENAME>{fname}\n<DESCRIPTION>{desc}\n<TEXT>\n{body}\n</TEXT>\n</DOCUMENT>")
    parts.append("</SEC-DOCUMENT>\n")
    return "\n".join(parts)


def assign_accessions(filings: list[Filing], wd: WorldDays, rng: np.random.Generator) -> None:
    """Accession ``CIK(10)-YY-NNNNNN`` in acceptance order per (company, year); filing date; film."""
    filings.sort(key=lambda f: (f.accept_ns, f.form, f.event_id or ""))
    seq: dict[tuple[int, int], int] = {}
    for f in filings:
        yy = to_et(f.accept_ns).year % 100
        n = seq.get((f.cik, yy), 0) + 1
        seq[(f.cik, yy)] = n
        f.accession = f"{f.cik:010d}-{yy:02d}-{n:06d}"
        f.filed_date = edgar_filed_date(f.accept_ns, wd)
        f.film = str(int(rng.integers(10_000_000, 99_999_999)))
        day = f.report_date if f.form != "8-K" else et_date(f.accept_ns)
        f.primary_doc = f"{f.ticker.lower()}-{day.strftime('%Y%m%d')}.htm"


def submissions_json(c: Company, filings: list[Filing], sizes: dict[str, int]) -> str:
    """SEC submissions API JSON (``filings.recent`` parallel arrays, newest first)."""
    fs = sorted(filings, key=lambda f: (f.accept_ns, f.accession), reverse=True)
    recent = {
        "accessionNumber": [f.accession for f in fs],
        "filingDate": [f.filed_date.isoformat() for f in fs],
        "reportDate": [f.report_date.isoformat() for f in fs],
        "acceptanceDateTime": [sec_acceptance_json(f.accept_ns) for f in fs],
        "act": ["34" for _ in fs],
        "form": [f.form for f in fs],
        "fileNumber": [file_number(c) for _ in fs],
        "filmNumber": [f.film for f in fs],
        "items": [",".join(f.items) for f in fs],
        "core_type": [f.form for f in fs],
        "size": [sizes[f.accession] for f in fs],
        "isXBRL": [0 for _ in fs],
        "isInlineXBRL": [0 for _ in fs],
        "isXBRLNumeric": [0 for _ in fs],
        "primaryDocument": [f.primary_doc for f in fs],
        "primaryDocDescription": [f.form for f in fs],
    }
    addr = {
        "street1": street(c),
        "street2": None,
        "city": T.CITIES[c.uid % len(T.CITIES)].upper(),
        "stateOrCountry": "XX",
        "zipCode": f"{10000 + (c.uid * 7919) % 89999:05d}",
        "stateOrCountryDescription": "XX",
        "isForeignLocation": 0,
        "foreignStateTerritory": None,
        "country": None,
        "countryCode": None,
    }
    doc = {
        "cik": f"{c.cik:010d}",
        "entityType": "operating",
        "sic": c.sic,
        "sicDescription": c.sic_description,
        "ownerOrg": "",
        "insiderTransactionForOwnerExists": 0,
        "insiderTransactionForIssuerExists": 1,
        "name": c.sec_title,
        "tickers": [c.ticker],
        "exchanges": ["Nasdaq"],
        "ein": irs_number(c),
        "lei": None,
        "description": "Synthetic filer of the finrag test world; all filings are generated.",
        "website": "",
        "investorWebsite": "",
        "category": "Large accelerated filer",
        "fiscalYearEnd": c.fiscal_year_end,
        "stateOfIncorporation": "DE",
        "stateOfIncorporationDescription": "DE",
        "addresses": {"mailing": addr, "business": addr},
        "phone": "(555) 010-0000",
        "flags": "",
        "formerNames": [],
        "filings": {"recent": recent, "files": []},
    }
    return json.dumps(doc)
