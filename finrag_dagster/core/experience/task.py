"""The experience task (seed 002 §5, FinEvolveBench protocol, US version).

Targets are the universe's sectors. On every trading day T of the evaluated split each method turns
the sector's news of decision days T−4 … T into a score s ∈ [−1, 1] per horizon h ∈ {1, 5, 10, 20};
the outcome is α = R_sector − R_QQQ over close T → close T+h, learnable only once close(T0+h) is
before the decision (the main loop's rule). Methods: Baseline, Pipe, Pipe + mem0, Pipe + MemRL,
Pipe + ToE (formula, eq. 13) and Pipe + ToE (LLM, eq. 14; needs an LLM reader backend,
:class:`.llm.LLMBackendRequired` otherwise), all on the embedded reader's per-news features
(:func:`..reader.embedded.tone`). Metrics: csIC (eqs 21–22) and tsIC (eqs 23–24). Every rule:
docs/experience.md, "The experience task" and "`core/experience/task.py`: design notes".
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa

from ..reader.embedded import tone
from ..settings import ExperienceSettings
from ..storage.schemas import TableSpec
from .induction import factor_text, masked
from .tree import ExperienceTree, Factor, Leaf, ToEParams

TASK_HORIZONS = (1, 5, 10, 20)
HKEYS = tuple(f"{h}d" for h in TASK_HORIZONS)
WINDOW = 5  # news of decision days T-4 .. T
HALF_LIFE = {1: 1.0, 5: 2.0, 10: 3.0, 20: 5.0}  # Pipe's recency half-life in sessions, per horizon
METHODS = ("Baseline", "Pipe", "Pipe+mem0", "Pipe+MemRL", "Pipe+ToE", "Pipe+ToE(llm)")

TASK_SCORES = TableSpec(
    "experience_task_scores",
    pa.schema(
        [
            pa.field("method", pa.string(), nullable=False),
            pa.field("target", pa.string(), nullable=False),
            pa.field("horizon", pa.string(), nullable=False),
            pa.field("score", pa.float64(), nullable=False),
            pa.field("alpha", pa.float64(), nullable=True),  # null until close(T+h) exists
            pa.field("n_news", pa.int32(), nullable=False),
        ]
    ),
    ("date",),
    ("method", "target", "horizon"),
    "Experience task (seed 002, sector targets): each method's score per target, day and horizon, and the realised excess return.",
    decision_time=False,  # alpha is written once matured; the scores themselves use only news up to T
)

TASK_RESULTS = TableSpec(
    "experience_task",
    pa.schema(
        [
            pa.field("table", pa.string(), nullable=False),
            pa.field("method", pa.string(), nullable=False),
            pa.field("horizon", pa.string(), nullable=False),
            pa.field("metric", pa.string(), nullable=False),
            pa.field("value", pa.float64(), nullable=True),
            pa.field("n", pa.int64(), nullable=False),
        ]
    ),
    (),
    ("table", "method", "horizon", "metric"),
    "Seed 002 Tables 1, 2 and 6 on the experience task: tsIC and csIC per method and horizon.",
)


# ------------------------------------------------------------------ targets and outcomes
def sector_returns(prices: pl.DataFrame, universe: pl.DataFrame, market: str) -> pl.DataFrame:
    """Daily close-to-close returns (adjusted): date, target (sector or the market ticker), ret.
    A sector's return is the equal-weight mean of its members' returns that day."""
    px = prices.select("date", "ticker", "adj_close").sort("ticker", "date")
    r = px.with_columns((pl.col("adj_close") / pl.col("adj_close").shift(1).over("ticker") - 1).alias("ret")).drop_nulls("ret")
    members = universe.filter(~pl.col("is_benchmark")).select("ticker", pl.col("sector").alias("target"))
    members = members.filter(~pl.col("target").is_in(["", "Unknown", "ETF"]) & pl.col("target").is_not_null())
    sect = r.join(members, on="ticker").group_by("date", "target").agg(pl.col("ret").mean())
    mkt = r.filter(pl.col("ticker") == market).select("date", pl.lit(market).alias("target"), "ret")
    return pl.concat([sect, mkt]).sort("target", "date")


def excess_returns(daily: pl.DataFrame, market: str, sessions: Sequence[dt.date], days: Sequence[dt.date]) -> pl.DataFrame:
    """α per (date T, target, horizon): compounded sector return close(T) → close(T+h) minus the
    market's; rows only where close(T+h) exists for both (else the horizon has not matured)."""
    idx = {d: i for i, d in enumerate(sessions)}
    wide = daily.pivot("target", index="date", values="ret").sort("date")
    dates = wide["date"].to_list()
    pos = {d: i for i, d in enumerate(dates)}
    targets = [c for c in wide.columns if c not in ("date", market)]
    if market not in wide.columns:
        raise ValueError(f"no returns for the market ticker {market}")
    g = {c: np.log1p(wide[c].to_numpy().astype(np.float64)) for c in [*targets, market]}
    # running sums of log returns, and of missing days: a window holding a missing day is NaN, the others are not
    cum = {c: np.concatenate([[0.0], np.cumsum(np.nan_to_num(v, nan=0.0))]) for c, v in g.items()}
    gaps = {c: np.concatenate([[0], np.cumsum(np.isnan(v))]) for c, v in g.items()}

    def span(c: str, i: int, k: int) -> float:
        """Sum of the log returns of rows i+1..k of ``c``; NaN when one of those days is missing."""
        return cum[c][k + 1] - cum[c][i + 1] if gaps[c][k + 1] == gaps[c][i + 1] else math.nan

    rows = []
    for t in days:
        i = pos.get(t)
        if i is None or t not in idx:
            continue
        for h in TASK_HORIZONS:
            j = idx[t] + h
            if j >= len(sessions) or sessions[j] not in pos:
                continue
            k = pos[sessions[j]]
            if k - i != h:  # a missing price day inside the window
                continue
            rm = math.expm1(span(market, i, k))
            for c in targets:
                v = span(c, i, k)
                if math.isfinite(v) and math.isfinite(rm):
                    rows.append((t, c, f"{h}d", math.expm1(v) - rm, sessions[j]))
    return pl.DataFrame(
        rows, schema={"date": pl.Date, "target": pl.Utf8, "horizon": pl.Utf8, "alpha": pl.Float64, "maturity_day": pl.Date}, orient="row"
    )


# ------------------------------------------------------------------ per-news features and the two scorers
def sentiment(text: str, saturation: int = 4) -> tuple[float, float]:
    """(sentiment in [-1, 1], importance in [0, 1]) of one news text: lexicon tone × strength."""
    t, hits = tone(text)
    imp = min(1.0, hits / saturation)
    return t * imp, imp


def baseline_score(texts: Sequence[str]) -> float:
    """Importance-weighted mean of per-news sentiment (0 without news or sentiment)."""
    num = den = 0.0
    for x in texts:
        s, w = sentiment(x)
        num += w * s
        den += w
    return num / den if den > 0 else 0.0


def pipe_scores(events: Sequence[tuple[str, int]]) -> dict[str, float]:
    """Pipe's score per horizon from structured events (text, age in sessions 0..4)."""
    feats = [(sentiment(x)[0], age) for x, age in events]
    feats = [(s, a) for s, a in feats if s != 0.0]  # neutral items filtered out
    out = {}
    for h, hk in zip(TASK_HORIZONS, HKEYS):
        if not feats:
            out[hk] = 0.0
            continue
        tot = sum(s * 0.5 ** (a / HALF_LIFE[h]) for s, a in feats)
        out[hk] = math.tanh(tot / math.sqrt(len(feats)))
    return out


def digest(events: Sequence[tuple[str, str, str, str]], names: dict, k: int = 3) -> tuple[str, str]:
    """(layer-1 text, state digest) of a (target, day) from its events (ticker, event type,
    headline, summary): the masked skeletons of the ``k`` events with the most sentiment hits."""
    scored = []
    for tk, et, head, summ in events:
        scored.append((-tone(f"{head}. {summ}")[1], masked(tk, head, names), factor_text(et, head, summ)))
    scored.sort(key=lambda x: (x[0], x[1]))
    top = scored[:k]
    return " ".join(x[2] for x in top), "; ".join(x[1] for x in top if x[1])


# ------------------------------------------------------------------ memories
@dataclass
class Note:
    vec: np.ndarray
    horizon: str
    outcome: float  # sign(alpha)
    q: float = 0.0  # MemRL's learned value


@dataclass
class NoteMemory:
    """mem0-style flat semantic memory (``rerank=False``) or MemRL-style Q-value memory."""

    rerank: bool = False
    k: int = 5  # notes used
    k1: int = 10  # MemRL: recalled before the rerank
    beta: float = 0.5  # MemRL: weight of Q in the rerank
    gamma: float = 0.5  # weight of the memory's opinion in the score
    lr: float = 0.2  # MemRL: Q learning rate
    notes: list[Note] = field(default_factory=list)

    def recall(self, vec: np.ndarray, horizon: str) -> list[tuple[int, float]]:
        cand = [(i, float(np.dot(vec, n.vec))) for i, n in enumerate(self.notes) if n.horizon == horizon]
        cand = [(i, s) for i, s in cand if s > 0]
        cand.sort(key=lambda x: (-x[1], x[0]))
        if not self.rerank:
            return cand[: self.k]
        pool = cand[: self.k1]
        pool.sort(key=lambda x: (-((1 - self.beta) * x[1] + self.beta * self.notes[x[0]].q), x[0]))
        return pool[: self.k]

    def adjust(self, base: float, used: list[tuple[int, float]]) -> float:
        if not used:
            return base
        m = sum(s * self.notes[i].outcome for i, s in used) / sum(s for _, s in used)
        return float(min(1.0, max(-1.0, base + self.gamma * m)))

    def reward(self, used: list[tuple[int, float]], r: float) -> None:
        if self.rerank:
            for i, _ in used:
                self.notes[i].q += self.lr * (r - self.notes[i].q)


def task_tree(prior: ExperienceTree, params: ToEParams) -> ExperienceTree:
    """The prior tree's factors and principles with fresh utilities over the task horizons."""
    fac = []
    for f in prior.factors:
        fac.append(
            Factor(
                f.name,
                f.keywords,
                [
                    Leaf(x.leaf_id, x.factor, x.principle, x.embedding.copy(), {h: params.q0 for h in params.horizons}, 0, 0, x.support)
                    for x in f.leaves
                ],
            )
        )
    tree = ExperienceTree(fac, params)
    tree._next = prior._next
    return tree


# ------------------------------------------------------------------ the harness
@dataclass
class DayInput:
    """One target on one day: raw news texts (Baseline), events (ticker, event type, headline,
    summary, age in sessions) for Pipe, and the state's layer-1 text, digest and vector."""

    target: str
    raw_texts: list[str]
    events: list[tuple[str, str, str, str, int]]
    f_text: str
    state: str
    vec: np.ndarray | None


UpdateFn = Callable[[ExperienceTree, str, str, float, float], None]  # tree, leaf id, horizon, score, alpha


@dataclass
class _Harness:
    """The task's running state: the outcomes by (day, target, horizon) -> (alpha, maturity), the
    methods run, the note memories and ToE trees, and the ToE settings."""

    alpha: dict
    methods: Sequence[str]
    mems: dict[str, NoteMemory]
    trees: dict[str, ExperienceTree]
    expansion_cap: int
    llm_update: UpdateFn | None
    q0: float


def _learn_outcome(hn: _Harness, d0: dt.date, target: str, hk: str, used: dict) -> None:
    """Feed the matured outcome α of (d0, target, hk) to what each method used for it: MemRL's Q,
    a new note in each memory, and the ToE leaf's eq. 13 update (eq. 14 for the LLM variant)."""
    a = hn.alpha[(d0, target, hk)][0]
    for m, mem in hn.mems.items():
        if m in used:
            vec, score, notes = used[m]
            mem.reward(notes, float(np.sign(score) * np.sign(a)))
    if "_vec" in used and used["_vec"] is not None:
        for mem in hn.mems.values():
            mem.notes.append(Note(used["_vec"], hk, float(np.sign(a))))
    for m, tree in hn.trees.items():
        if m in used and used[m] is not None:
            leaf_id, score = used[m]
            if score == 0:
                continue
            if m == "Pipe+ToE(llm)":
                if hn.llm_update is None:
                    raise ValueError("Pipe+ToE(llm) needs an LLM update function")
                hn.llm_update(tree, leaf_id, hk, score, a)
            else:
                tree.update(leaf_id, hk, float(np.sign(score)) * a)


def _release_matured(hn: _Harness, pending: list, t: dt.date) -> list:
    """Learn from the outcomes matured strictly before ``t`` (close(T0+h) <= close(t-1)); returns
    the ones still pending."""
    keep = []
    for item in pending:
        mat, d0, target, hk, used = item
        if mat >= t:
            keep.append(item)
            continue
        _learn_outcome(hn, d0, target, hk, used)
    return keep


def _toe_score(hn: _Harness, tree: ExperienceTree, x: DayInput, hk: str, pipe_h: float) -> tuple[float, tuple[str, float] | None]:
    """(score, (leaf id, score) or None) of a ToE method at horizon ``hk``: the selected leaf (a new
    one under the best factor when none clears and the factor has room), s_h = clip(Pipe_h · Q_h / q0,
    −1, 1); Pipe's score without a leaf."""
    leaf = None
    if x.vec is not None:
        sel = tree.select(x.f_text, x.vec, hk)
        leaf = sel.leaf
        if leaf is None and sel.factor is not None and len(sel.factor.leaves) < hn.expansion_cap and x.state:
            leaf = tree.expand(sel.factor, x.state, x.vec)
            leaf.n_recall += 1
    if leaf is None:
        return pipe_h, None
    s = float(min(1.0, max(-1.0, pipe_h * leaf.q[hk] / hn.q0)))
    return s, (leaf.leaf_id, s)


def _score_input(hn: _Harness, t: dt.date, x: DayInput, rows: list, pending: list) -> None:
    """Score one target on day ``t`` with every method and horizon: append its rows, and its
    (maturity, day, target, horizon, what each method used) to ``pending`` when α is known."""
    base = baseline_score(x.raw_texts)
    pipe = pipe_scores([(f"{hd}. {sm}", age) for _, _, hd, sm, age in x.events])
    per_h: dict[str, dict] = {hk: {"_vec": x.vec} for hk in HKEYS}
    for hk in HKEYS:
        out = {"Baseline": base, "Pipe": pipe[hk]}
        for m, mem in hn.mems.items():
            if m in hn.methods:
                used = mem.recall(x.vec, hk) if x.vec is not None else []
                out[m] = mem.adjust(pipe[hk], used)
                per_h[hk][m] = (x.vec, out[m], used)
        for m, tree in hn.trees.items():
            out[m], per_h[hk][m] = _toe_score(hn, tree, x, hk, pipe[hk])
        a = hn.alpha.get((t, x.target, hk))
        for m in hn.methods:
            if m in out:
                rows.append((m, t, x.target, hk, float(out[m]), a[0] if a else None, len(x.events)))
        if a is not None:
            pending.append((a[1], t, x.target, hk, per_h[hk]))


_TASK_SCORE_SCHEMA = {
    "method": pl.Utf8,
    "date": pl.Date,
    "target": pl.Utf8,
    "horizon": pl.Utf8,
    "score": pl.Float64,
    "alpha": pl.Float64,
    "n_news": pl.Int32,
}


def run_task(
    days: list[dt.date],
    inputs: Callable[[dt.date], list[DayInput]],
    alphas: pl.DataFrame,
    prior: ExperienceTree | None,
    methods: Sequence[str] = METHODS[:5],
    params: ExperienceSettings = ExperienceSettings(),
    llm_update: UpdateFn | None = None,
) -> pl.DataFrame:
    """Scores of every method, target, day and horizon, stepping the days in order and releasing
    each (day, horizon) outcome to the memories only on the day after it matured. ``params``: the
    trees' q0, eta and expansion cap (settings ``[experience]``)."""
    q0, eta, expansion_cap = params.q0, params.eta, params.expansion_cap
    alpha = {(r[0], r[1], r[2]): (r[3], r[4]) for r in alphas.select("date", "target", "horizon", "alpha", "maturity_day").rows()}
    params = ToEParams(q0=q0, eta=eta, horizons=HKEYS)
    mems = {"Pipe+mem0": NoteMemory(rerank=False), "Pipe+MemRL": NoteMemory(rerank=True)}
    trees = {}
    if prior is not None:
        for m in ("Pipe+ToE", "Pipe+ToE(llm)"):
            if m in methods:
                trees[m] = task_tree(prior, params)
    hn = _Harness(alpha=alpha, methods=methods, mems=mems, trees=trees, expansion_cap=expansion_cap, llm_update=llm_update, q0=q0)
    pending: list[tuple[dt.date, dt.date, str, str, dict]] = []  # (maturity, day, target, horizon, what each method used)
    rows = []
    for t in days:
        pending = _release_matured(hn, pending, t)
        for x in inputs(t):
            _score_input(hn, t, x, rows, pending)
    return pl.DataFrame(rows, schema=_TASK_SCORE_SCHEMA, orient="row")


# ------------------------------------------------------------------ metrics (eqs 21-24)
def _corr(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def cs_ic(scores: pl.DataFrame) -> pl.DataFrame:
    """csIC_h = mean over days of Corr_i(s, α) (eqs 21-22); days with < 3 targets or no spread skipped."""
    rows = []
    for (m, h), g in scores.group_by("method", "horizon"):
        g = g.drop_nulls("alpha").sort("date", "target")  # a (method, horizon) with nothing matured yet still gets its row, value null
        vals = [c for (_,), d in g.group_by("date", maintain_order=True) if (c := _corr(d["score"].to_numpy(), d["alpha"].to_numpy())) is not None]
        rows.append((m, h, float(np.mean(vals)) if vals else None, len(vals)))
    return pl.DataFrame(rows, schema={"method": pl.Utf8, "horizon": pl.Utf8, "value": pl.Float64, "n": pl.Int64}, orient="row")


def ts_ic(scores: pl.DataFrame) -> pl.DataFrame:
    """tsIC_h = mean over targets of Corr_t(s, α) (eqs 23-24); targets with < 3 days or no spread skipped."""
    rows = []
    for (m, h), g in scores.group_by("method", "horizon"):
        g = g.drop_nulls("alpha").sort("target", "date")
        vals = [c for (_,), d in g.group_by("target", maintain_order=True) if (c := _corr(d["score"].to_numpy(), d["alpha"].to_numpy())) is not None]
        rows.append((m, h, float(np.mean(vals)) if vals else None, len(vals)))
    return pl.DataFrame(rows, schema={"method": pl.Utf8, "horizon": pl.Utf8, "value": pl.Float64, "n": pl.Int64}, orient="row")


def result_tables(scores: pl.DataFrame) -> pl.DataFrame:
    """Seed 002 Table 1 (tsIC), Table 6 (csIC) per method × horizon, Table 2 (formula vs LLM update at 20d)."""
    ts, cs = ts_ic(scores), cs_ic(scores)
    parts = [
        ts.with_columns(pl.lit("Table 1").alias("table"), pl.lit("tsIC").alias("metric")),
        cs.with_columns(pl.lit("Table 6").alias("table"), pl.lit("csIC").alias("metric")),
    ]
    upd = {"Pipe+ToE": "Pipe+formula", "Pipe+ToE(llm)": "Pipe+llm"}
    for df, metric in ((ts, "tsIC"), (cs, "csIC")):
        t2 = df.filter(pl.col("method").is_in(list(upd)) & (pl.col("horizon") == "20d"))
        parts.append(t2.with_columns(pl.col("method").replace_strict(upd), pl.lit("Table 2").alias("table"), pl.lit(metric).alias("metric")))
    out = pl.concat([p.select("table", "method", "horizon", "metric", "value", "n") for p in parts])
    order = {m: i for i, m in enumerate([*METHODS, "Pipe+formula", "Pipe+llm"])}
    hord = {h: i for i, h in enumerate(HKEYS)}
    return (
        out.with_columns(
            pl.col("method").replace_strict(order, return_dtype=pl.Int32).alias("_o"),
            pl.col("horizon").replace_strict(hord, return_dtype=pl.Int32).alias("_h"),
        )
        .sort("table", "_o", "_h", "metric")  # Table 2 holds both metrics of a method and horizon: ties would fall in any order
        .drop("_o", "_h")
    )
