"""FNSPID-format news rows around the planted events, plus background items.

Per event: the anchor (timed), 0-3 re-reports (some with an identical title, some the same
URL under a peer ticker), companions before decision_time(D) (carrying the planted news
tone), follow-ups on D+1..D+8, a same-sector peer article, and leakage traps published after
close(D) that reveal the realised move. Each row also carries its truth (role, tone, ...),
which the writer splits off into truth/documents.parquet.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import numpy as np

from ...core.calendar import date_only_public_time
from ...core.events import EARNINGS, OTHER, classify
from ...core.text import stable_hash
from ..news import FNSPID_COLUMNS as FNSPID_COLUMNS  # the reader's columns, re-exported for world.py
from . import params as P
from . import text as T
from .clock import MIN, NS, WorldDays, et_date, et_ns, fnspid_date, fnspid_time
from .events import Event, draw_tone
from .filings import QuarterFin, fq_short, money_short
from .universe import Company

PRODUCTS_T = ("New Platform", "Flagship Device", "Updated Device Line", "New Service Tier")
PARTNERS_T = ("European Carrier", "Major Cloud Provider", "National Retailer", "Global Automaker", "Hospital Network", "Federal Agency")
DAY_NS = 86400 * NS


@dataclass
class NewsRow:
    """One FNSPID row plus its truth."""

    date_str: str
    title: str
    ticker: str
    url: str
    publisher: str
    author: str
    article: str
    summaries: tuple[str, str, str, str]
    public_ns: int
    date_only: bool
    role: str
    event_id: str | None
    event_type: str | None
    tone: int
    reveals_event_id: str | None = None
    reveals_h: int | None = None
    in_utility: bool = False

    def fnspid(self) -> list[str]:
        return [self.date_str, self.title, self.ticker, self.url, self.publisher, self.author, self.article, *self.summaries]

    @property
    def summary(self) -> str:
        """What the loader uses as summary: first non-empty of the four, else ''."""
        for s in self.summaries:
            if s:
                return s
        return ""


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:80]


def headline_case(s: str) -> str:
    """Capitalise each word's first letter, keeping acronyms (``FTC review`` -> ``FTC Review``)."""
    return " ".join(w[:1].upper() + w[1:] for w in s.split())


def _pick(rng: np.random.Generator, seq):
    return seq[int(rng.integers(0, len(seq)))]


class NewsBuilder:
    """Builds every news row of the world (deterministic given its generator)."""

    def __init__(
        self,
        rng: np.random.Generator,
        wd: WorldDays,
        companies: dict[str, Company],
        closes: dict[str, np.ndarray],
        fin: dict[str, dict[dt.date, QuarterFin]],
        peers: dict[str, list[str]],
        publisher_utility: bool = False,
    ):
        self.rng = rng
        self.publisher_utility = publisher_utility  # world.publisher_utility: the class follows the tone's rightness
        self.wd = wd
        self.co = companies
        self.closes = closes
        self.fin = fin
        self.peers = peers
        self.last_ns = int(wd.closes[-1])

    # ------------------------------------------------------------ helpers
    def price_before(self, ticker: str, ns: int) -> float:
        i = int(np.searchsorted(self.wd.closes, ns, side="right")) - 1
        return float(self.closes[ticker][max(i, 0)])

    def _publisher(self, avoid: str | None = None, right: bool | None = None) -> tuple[str, str]:
        if self.publisher_utility and right is not None:
            cls = P.PUBLISHER_CLASSES[int(self.rng.choice(3, p=P.CLASS_GIVEN_RIGHT if right else P.CLASS_GIVEN_WRONG))]
            pubs = [p for p in T.PUBLISHERS if P.PUBLISHER_CLASS[p[0]] == cls and p[0] != avoid]
            return _pick(self.rng, pubs)
        while True:
            p = _pick(self.rng, T.PUBLISHERS)
            if p[0] != avoid:
                return p

    def _url(self, base: str, title: str, *key) -> str:
        return f"{base}{slug(title)}-{stable_hash(*key, n=10)}"

    def _stamp(self, ns: int | None, day: dt.date | None) -> tuple[str, int, bool]:
        """(FNSPID Date string, public time ns, date_only) of a timed or date-only row."""
        if day is not None:
            return fnspid_date(day), int(date_only_public_time(day).value), True
        ns -= ns % NS  # FNSPID stamps carry whole seconds
        if ns % DAY_NS == 0:  # never a timed row at exactly 00:00:00 UTC
            ns += NS
        return fnspid_time(ns), int(ns), False

    def _article(
        self, c: Company, title: str, lead: str, details: tuple[str, ...], kw: dict, publisher: str, anchor: bool = False
    ) -> tuple[str, tuple[str, str, str, str]]:
        rng = self.rng
        detail = _pick(rng, details).format(**kw) if details else ""
        generic = [g.format(**kw) for g in T.GENERIC]
        g1, g2 = generic[int(rng.integers(0, len(generic)))], generic[int(rng.integers(0, len(generic)))]
        sents = [lead] + ([detail] if detail else []) + [g1] + ([g2] if g2 != g1 else [])
        paras = [" ".join(sents[:2]), " ".join(sents[2:])]
        head = ""
        if rng.random() < 0.3:
            head = f"{publisher}\n{publisher}\n\n\n"
        body = head + "\n".join(p for p in paras if p)
        if rng.random() < 0.3:
            body += "\n" + T.BOILERPLATE
        lsa = f"{lead} {detail}".strip()
        luhn = f"{lead} {g1}"
        textrank = f"{detail} {g1}".strip()
        lexrank = lead
        out = [lsa, luhn, textrank, lexrank]
        for k in range(4):
            if (k > 0 or not anchor) and rng.random() < 0.1:
                out[k] = ""
        if not any(out):
            out[3] = lead
        return body, (out[0], out[1], out[2], out[3])

    def _kw(self, c: Company, ev: Event | None, ns: int) -> dict:
        rng = self.rng
        px = self.price_before(c.ticker, ns)
        fin = self.fin.get(c.ticker, {})
        qf = None
        if ev is not None and ev.fq is not None:
            qf = fin.get(ev.fq.end)
        if qf is None and fin:
            ends = [e for e in fin if e <= et_date(ns)]
            qf = fin[ends[-1]] if ends else next(iter(fin.values()))
        shares = qf.shares if qf else 1000.0
        kw = dict(
            co=c.short_name,
            tk=c.ticker,
            px=f"{px:.2f}",
            cap=f"{px * shares / 1000:.0f}",
            qn=f"Q{qf.fq.q}" if qf else "Q1",
            fqs=fq_short(qf.fq) if qf else "the quarter",
            rev=money_short(qf.revenue) if qf else "$1.0B",
            eps=f"${qf.eps:.2f}" if qf else "$1.00",
            gm=f"{qf.gross_margin:.1f}" if qf else "50.0",
            yoy=f"{abs(qf.yoy):.0f}" if qf else "5",
            amt=f"{rng.uniform(0.5, 15.0):.1f}",
            pct=f"{int(rng.integers(3, 25))}",
            target=_pick(rng, T.TARGETS),
            partner_t=_pick(rng, PARTNERS_T),
            exec=_pick(rng, T.EXECUTIVES),
            city=_pick(rng, T.CITIES),
            unit_t=_pick(rng, T.UNITS).title(),
            product_t=_pick(rng, PRODUCTS_T),
            agency=_pick(rng, T.AGENCIES_POS),
            div=f"{rng.uniform(0.1, 1.5):.2f}",
            firm=_pick(rng, T.FIRMS),
        )
        return kw

    # ------------------------------------------------------------ per event
    def event_rows(self, ev: Event) -> tuple[list[NewsRow], str, str]:
        """All rows of one event; also returns (anchor title, subject)."""
        c = self.co[ev.ticker]
        tp = P.TYPE_PARAMS[ev.event_type]
        kw, subject = self._event_kw(c, ev)
        anchor = self._anchor_row(c, ev, kw)
        peers = self.peers.get(c.ticker, [])
        rows: list[NewsRow] = [anchor]
        rows += self._rereports(c, ev, anchor)
        rows += self._same_url_peer(ev, anchor, peers)
        rows += self._companions(c, ev, kw, tp)
        rows += self._followups(c, ev, kw, tp)
        rows += self._peer_article(c, ev, kw, tp, peers)
        rows += self._traps(c, ev, kw)
        return rows, anchor.title, subject

    def _event_kw(self, c: Company, ev: Event) -> tuple[dict, str]:
        """Template fields of an event as of its anchor time, with the event's subject; returns (fields, subject)."""
        kw = self._kw(c, ev, ev.anchor_ns)
        subject = f"Q{ev.fq.q} earnings" if ev.quarterly and ev.fq else _pick(self.rng, T.SUBJECTS[ev.event_type])
        kw["subject"] = subject
        return kw, subject

    def _anchor_row(self, c: Company, ev: Event, kw: dict) -> NewsRow:
        """The anchor: draw templates until the Table 5 mapper gives the intended type, then stamp it."""
        rng = self.rng
        if ev.event_type == EARNINGS and ev.quarterly:
            titles, leads = T.QUARTERLY_TITLES, T.QUARTERLY_LEADS
        else:
            titles, leads = T.TITLES[ev.event_type], T.LEADS[ev.event_type]
        details = T.DETAILS[ev.event_type]
        pub, base = self._publisher(right=ev.news_tone == ev.d_short)
        for _attempt in range(40):
            title = _pick(rng, titles[ev.news_tone]).format(**kw)
            lead = _pick(rng, leads[ev.news_tone]).format(**kw)
            article, sums = self._article(c, title, lead, details, kw, pub, anchor=True)
            summary = next((s for s in sums if s), "")
            if classify(title, summary)[0] == ev.event_type:
                break
        else:  # pragma: no cover - templates are tested
            raise AssertionError(f"no template gives {ev.event_type} for {ev.event_id}: {title!r}")
        date_str, pns, donly = self._stamp(ev.anchor_ns, None)
        url = self._url(base, title, ev.event_id, "anchor")
        author = _pick(rng, T.AUTHORS)
        return NewsRow(
            date_str,
            title,
            c.ticker,
            url,
            pub,
            author,
            article,
            sums,
            pns,
            donly,
            "anchor",
            ev.event_id,
            ev.event_type,
            ev.news_tone,
            in_utility=True,
        )

    def _rereports(self, c: Company, ev: Event, anchor: NewsRow) -> list[NewsRow]:
        """0-3 re-reports of the anchor by other publishers, some with the title reworded."""
        rng = self.rng
        title, article, sums = anchor.title, anchor.article, anchor.summaries
        rows: list[NewsRow] = []
        n_re = int(rng.choice(4, p=P.REREPORT_P))
        for k in range(n_re):
            p2, b2 = self._publisher(avoid=anchor.publisher)
            t_re = title if rng.random() < 0.3 else T.reword(title, int(rng.integers(0, 12)))
            ns = ev.anchor_ns + int(rng.integers(5, 360)) * MIN + int(rng.integers(0, 60)) * NS
            day = et_date(ns) if rng.random() < P.DATE_ONLY_P["rereport"] else None
            if (day is None and ns > self.last_ns) or (day is not None and day > self.wd.days[-1]):
                continue
            ds, pn, do = self._stamp(ns, day)
            if t_re != title:  # reworded re-reports also reword the article and summaries lightly
                art_re, sums_re = T.reword_text(article), tuple(T.reword_text(x) for x in sums)
            else:
                art_re, sums_re = article, sums
            rows.append(
                NewsRow(
                    ds,
                    t_re,
                    c.ticker,
                    self._url(b2, t_re, ev.event_id, "re", k),
                    p2,
                    _pick(rng, T.AUTHORS),
                    art_re,
                    sums_re,
                    pn,
                    do,
                    "rereport",
                    ev.event_id,
                    ev.event_type,
                    ev.news_tone,
                )
            )
        return rows

    def _same_url_peer(self, ev: Event, anchor: NewsRow, peers: list[str]) -> list[NewsRow]:
        """Sometimes the anchor again, same URL, under a same-sector peer's ticker."""
        rows: list[NewsRow] = []
        if peers and self.rng.random() < P.SAME_URL_PEER_P:
            pt = _pick(self.rng, peers)
            a = anchor
            rows.append(
                NewsRow(
                    a.date_str,
                    a.title,
                    pt,
                    a.url,
                    a.publisher,
                    a.author,
                    a.article,
                    a.summaries,
                    a.public_ns,
                    a.date_only,
                    "rereport",
                    ev.event_id,
                    ev.event_type,
                    ev.news_tone,
                )
            )
        return rows

    def _companions(self, c: Company, ev: Event, kw: dict, tp) -> list[NewsRow]:
        """0-2 companion articles before decision_time(D), carrying the planted news tone."""
        rng = self.rng
        rows: list[NewsRow] = []
        close_d = int(self.wd.closes[ev.d_idx])
        n_comp = int(rng.choice(3, p=P.COMPANION_P))
        for k in range(n_comp):
            tone = draw_tone(rng, ev.d_short, tp.rho_news)
            day = None
            ns = 0
            if et_date(ev.anchor_ns) < self.wd.days[ev.d_idx] and rng.random() < P.DATE_ONLY_P["companion"]:
                day = et_date(ev.anchor_ns)
            else:
                lo, hi = ev.anchor_ns + 5 * MIN, close_d - 2 * MIN
                if hi <= lo:
                    continue
                ns = int(rng.integers(lo, hi))
            rows.append(self._commentary(ev, kw, tone, ns, day, "companion", c.ticker, k))
        return rows

    def _followups(self, c: Company, ev: Event, kw: dict, tp) -> list[NewsRow]:
        """0-2 follow-ups on later sessions (D+1 .. D+8)."""
        rng = self.rng
        rows: list[NewsRow] = []
        n_fu = int(rng.choice(3, p=P.FOLLOWUP_P))
        for k in range(n_fu):
            i = ev.d_idx + int(rng.integers(1, 9))
            if i >= len(self.wd):
                continue
            tone = draw_tone(rng, ev.d_short, tp.rho_news)
            ns, day = self._time_on(i, P.DATE_ONLY_P["followup"])
            rows.append(self._commentary(ev, kw, tone, ns, day, "followup", c.ticker, k))
        return rows

    def _peer_article(self, c: Company, ev: Event, kw: dict, tp, peers: list[str]) -> list[NewsRow]:
        """Sometimes a same-sector peer's article mentioning the event."""
        rng = self.rng
        rows: list[NewsRow] = []
        close_d = int(self.wd.closes[ev.d_idx])
        if peers and rng.random() < P.PEER_P:
            pt = _pick(rng, peers)
            tone = draw_tone(rng, ev.d_short, tp.rho_news)
            if rng.random() < 0.5 and close_d - 2 * MIN > ev.anchor_ns + 5 * MIN:
                ns, day = int(rng.integers(ev.anchor_ns + 5 * MIN, close_d - 2 * MIN)), None
            else:
                i = ev.d_idx + int(rng.integers(1, 6))
                ns, day = self._time_on(i, 0.0)
            pkw = dict(kw, peer=self.co[pt].short_name)
            rows.append(self._commentary(ev, pkw, tone, ns, day, "peer", pt, 0))
        return rows

    def _traps(self, c: Company, ev: Event, kw: dict) -> list[NewsRow]:
        """0-2 leakage traps published after close(D) that reveal the realised move."""
        rows: list[NewsRow] = []
        n_trap = int(self.rng.choice(3, p=P.TRAP_P))
        for k in range(n_trap):
            row = self._trap(c, ev, kw, k)
            if row is not None:
                rows.append(row)
        return rows

    def _time_on(self, i: int, p_date_only: float) -> tuple[int, dt.date | None]:
        day = self.wd.days[i]
        if self.rng.random() < p_date_only:
            return 0, day
        ns = et_ns(day, int(self.rng.integers(7 * 3600, 19 * 3600)))
        return min(ns, self.last_ns), None

    def _commentary(self, ev: Event, kw: dict, tone: int, ns: int, day: dt.date | None, role: str, ticker: str, k: int) -> NewsRow:
        """A companion, follow-up or peer article (``role``, titled from that role's templates) on ``ticker``, the k-th of its kind."""
        rng = self.rng
        titles = {"companion": T.COMPANION_TITLES, "followup": T.FOLLOWUP_TITLES, "peer": T.PEER_TITLES}[role]
        pub, base = self._publisher(right=tone == ev.d_short)
        subj = kw["subject"]
        title = _pick(rng, titles[tone]).format(**dict(kw, subject=headline_case(subj)))
        lead = _pick(rng, T.COMPANION_LEADS[tone]).format(**dict(kw, subject=subj))
        article, sums = self._article(self.co[ticker], title, lead, T.DETAILS[ev.event_type], kw, pub)
        ds, pn, do = self._stamp(ns, day)
        return NewsRow(
            ds,
            title,
            ticker,
            self._url(base, title, ev.event_id, role, k, ticker),
            pub,
            _pick(rng, T.AUTHORS),
            article,
            sums,
            pn,
            do,
            role,
            ev.event_id,
            ev.event_type,
            tone,
            in_utility=True,
        )

    def _trap(self, c: Company, ev: Event, kw: dict, k: int) -> NewsRow | None:
        rng = self.rng
        kind = _pick(rng, P.TRAP_KINDS)
        d = ev.d_idx
        closes = self.closes[c.ticker]
        if kind in ("after_hours", "date_only_d"):
            h = 1
            ns = int(self.wd.closes[d]) + int(rng.integers(2, 40)) * MIN + int(rng.integers(0, 60)) * NS
            day = self.wd.days[d] if kind == "date_only_d" else None
            tpl = T.TRAP_TITLES["after_hours"]
        else:
            h = int(rng.integers(1, 6))
            ns = int(self.wd.closes[d + h]) + int(rng.integers(5, 180)) * MIN
            day = self.wd.days[d + h] if rng.random() < P.TRAP_LATER_DATE_ONLY_P else None
            tpl = T.TRAP_TITLES["later"]
        if day is None and ns > self.last_ns:
            return None
        r = closes[d + h] / closes[d] - 1.0
        tone = 1 if r > 0.0025 else (-1 if r < -0.0025 else 0)
        tkw = dict(kw, pct=f"{abs(r) * 100:.1f}", k=T.SESSION_WORDS[h], subject=headline_case(kw["subject"]))
        title = tpl[tone].format(**tkw)
        move = "rose" if r > 0 else "fell"
        lead = (
            f"{c.short_name} shares {move} {abs(r) * 100:.1f}% from the close on "
            f"{self.wd.days[d].strftime('%B %d').replace(' 0', ' ')} after the {kw['subject']}."
        )
        pub, base = self._publisher()
        article, sums = self._article(c, title, lead, (), kw, pub)
        ds, pn, do = self._stamp(ns, day)
        return NewsRow(
            ds,
            title,
            c.ticker,
            self._url(base, title, ev.event_id, "trap", k),
            pub,
            _pick(rng, T.AUTHORS),
            article,
            sums,
            pn,
            do,
            "trap",
            ev.event_id,
            ev.event_type,
            tone,
            reveals_event_id=ev.event_id,
            reveals_h=h,
        )

    # ------------------------------------------------------------ background
    def background_rows(self, c: Company, first_day: dt.date, years: float, rate: float = P.BACKGROUND_PER_YEAR) -> list[NewsRow]:
        rng = self.rng
        n = int(rng.poisson(rate * years))
        span = (self.wd.days[-1] - first_day).days
        out: list[NewsRow] = []
        for k in range(n):
            day = first_day + dt.timedelta(days=int(rng.integers(0, span + 1)))
            tone = int(rng.choice([0, 1, -1], p=[0.8, 0.1, 0.1]))
            if rng.random() < P.DATE_ONLY_P["background"]:
                ns, dday = 0, day
            else:
                ns, dday = et_ns(day, int(rng.integers(6 * 3600, 21 * 3600))), None
                if ns > self.last_ns:
                    continue
            kw = self._kw(c, None, ns if dday is None else int(date_only_public_time(day).value))
            title = _pick(rng, T.BACKGROUND_TITLES[tone]).format(**kw)
            lead = _pick(rng, T.BACKGROUND_LEADS[tone]).format(**kw)
            pub, base = self._publisher()
            article, sums = self._article(c, title, lead, T.DETAILS[OTHER], kw, pub)
            ds, pn, do = self._stamp(ns, dday)
            out.append(
                NewsRow(
                    ds,
                    title,
                    c.ticker,
                    self._url(base, title, c.ticker, "bg", k, day.isoformat()),
                    pub,
                    _pick(rng, T.AUTHORS),
                    article,
                    sums,
                    pn,
                    do,
                    "background",
                    None,
                    None,
                    tone,
                )
            )
        return out
