"""The feedback loop over the lake: what :mod:`.loop` reads, where it starts, what it writes.

:mod:`.loop` steps one variant through decision days with everything handed in (a
:class:`~.loop.LoopEnv`). Here that environment is built from the lake (anchors, pools, cards,
evidence, labels, the stored outputs of earlier days, the class weights of the split, the
parameters of the test split), the state of the day before a range is read back (memory snapshot,
experience tree), and a variant family's results are written (:func:`run_family`) together with
the lineage of its memory updates (:func:`family_feedback`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pyarrow as pa

from .day_run import DayRun
from .errors import MissingInput, StepError
from .experience.loop import anchor_states
from .experience.prior import TREE_ID, company_names
from .experience.store import known_before, read_tree, write_rows
from .experience.tree import ExperienceTree, ToEParams
from .labels import labels_from_lake
from .loop import DayData, LoopEnv, Past, ToEEnv, Variant, memory_keys, run_days
from .memory.families import FamilyMap, load_publisher_classes
from .memory.feedback import CreditRule, build_feedback, label_frequencies, shuffle_labels
from .memory.source_memory import MemoryParams, SourceMemory, class_weights
from .reader.cache import PromptCache
from .reader.prompt import EvidenceItem
from .reader.run import DayStats, ReaderIncomplete
from .settings import HORIZON_KEYS
from .splits import bounds_of_test_split, lora_days, split_bounds, split_start_of
from .storage.lake import conform

if TYPE_CHECKING:
    from .calendar import TradingCalendar
    from .settings import Settings
    from .storage.lake import Lake


# ------------------------------------------------------------------ protocol: weights and parameters per split
def weights_for(s: Settings, cal: TradingCalendar, lake: Lake, start: str) -> tuple[dict, dict]:
    """w_y = 1/(3 pi_y) with pi from the previous split's labels that matured before ``start``
    (for the test split: the validation split). Uniform when there is no previous split."""
    bounds = split_bounds(s, cal)
    prev = [b for b in bounds if b[1] < start]
    if not prev:
        return {h: {y: 1.0 for y in (-1, 0, 1)} for h in HORIZON_KEYS}, {}
    a, b = prev[-1]
    lab = lake.read_range("labels", a, b)
    lab = lab.filter(pl.col("maturity_day") < dt.date.fromisoformat(start))
    freq = label_frequencies(lab)
    if not freq:
        return {h: {y: 1.0 for y in (-1, 0, 1)} for h in HORIZON_KEYS}, {}
    return class_weights(freq), freq


def test_split_params(
    s: Settings, lake: Lake, cal: TradingCalendar, base: MemoryParams, days: list[str], overridden: bool = False
) -> tuple[Callable[[str], MemoryParams], str]:
    """(params for a decision day, a line saying what the test split uses).

    With ``memory.test_params = "selected"`` the test split runs with Table 6's selection (the
    ``sensitivity`` table: chosen on the validation split from labels matured before the test split
    starts, so it is known on the test split's first day); ``overridden`` (λ/δ given as run config)
    wins over it. A range with test-split days and no selection in the lake is an error
    (:class:`MissingInput`), not a silent default."""
    test = bounds_of_test_split(s, cal)
    if test is None:
        return (lambda d: base), "no test split in the calendar"
    if s.memory.test_params != "selected" or overridden:
        why = "run config" if overridden else "settings.memory (memory.test_params = settings)"
        return (lambda d: base), f"test split: lambda={base.lam}, delta={base.delta} from {why}"
    if not any(test[0] <= d <= test[1] for d in days):
        return (lambda d: base), "no test-split day in this range"
    sel = lake.read("sensitivity").filter(pl.col("row") == "selected") if lake.partition_files("sensitivity") else pl.DataFrame()
    if sel.height < 2:
        raise MissingInput(
            "memory.test_params = 'selected' but the Table 6 selection (asset `sensitivity`) is not in the lake; "
            "materialise `sensitivity` first (it needs only the validation split) or set memory.test_params = 'settings'"
        )
    vals = dict(zip(sel["metric"].to_list(), sel["value"].to_list()))
    chosen = MemoryParams(kappa=base.kappa, delta=float(vals["delta"]), lam=float(vals["lambda"]))
    return (lambda d: chosen if d >= test[0] else base), f"test split: lambda={chosen.lam}, delta={chosen.delta} selected on validation (Table 6)"


# ------------------------------------------------------------------ reading inputs
def evidence_items(lake: Lake, passage_ids: list[str]) -> dict[str, EvidenceItem]:
    """The passages the reader may cite, by id."""
    if not passage_ids:
        return {}
    con = lake.duckdb(tables=["evidence"])
    con.register("wanted", pa.table({"passage_id": pa.array(sorted(set(passage_ids)))}))
    rows = con.execute(
        "SELECT e.passage_id, source_family, title, text, public_time, form_type, item FROM evidence e JOIN wanted w USING (passage_id)"
    ).fetchall()
    con.close()
    return {r[0]: EvidenceItem(r[0], r[1], r[2], r[3], r[4].isoformat(), r[5], r[6]) for r in rows}


def family_map(s: Settings) -> FamilyMap:
    """An empty passage -> memory-family map under ``memory.families`` (its publisher classes read
    and checked here, so that a bad mapping file fails before the loop starts)."""
    if s.memory.families == "seed000":
        return FamilyMap("seed000")
    return FamilyMap(s.memory.families, load_publisher_classes(s.memory.publisher_classes))


def families_note(fm: FamilyMap) -> dict:
    """What a finer scheme did, for the assets' metadata: passages per family and the news passages
    whose publisher the mapping file does not list (mapped to news:other, counted here)."""
    per = dict.fromkeys(fm.families, 0)
    for f in fm.of.values():
        per[f] = per.get(f, 0) + 1
    top = dict(sorted(fm.unknown_publishers.items(), key=lambda kv: (-kv[1], kv[0]))[:10])
    return {"scheme": fm.scheme, "passages": per, "unlisted_publisher_passages": sum(fm.unknown_publishers.values()), "unlisted_publishers": top}


def map_passages(fm: FamilyMap, lake: Lake, passage_ids) -> FamilyMap:
    """Add the passages of ``passage_ids`` that ``fm`` does not know yet (their publisher from
    news_raw, their form and item from evidence, their filing's items from filings_raw); nothing to
    read under seed 000's families."""
    if fm.identity:
        return fm
    want = sorted({p for p in passage_ids if p not in fm.of})
    if not want:
        return fm
    con = lake.duckdb(tables=["evidence", "news_raw", "filings_raw"])
    con.register("wanted", pa.table({"passage_id": pa.array(want)}))
    rows = con.execute(
        "SELECT e.passage_id, e.source_family, n.publisher, e.form_type, e.item, e.text, f.items FROM evidence e JOIN wanted w USING (passage_id) "
        "LEFT JOIN (SELECT DISTINCT news_id, publisher FROM news_raw) n ON e.source_family = 'news' AND n.news_id = e.doc_id "
        "LEFT JOIN (SELECT DISTINCT accession, items FROM filings_raw) f ON e.source_family = 'sec_filing' AND f.accession = e.doc_id"
    ).fetchall()
    con.close()
    fm.add(rows)
    return fm


def _by_day(df: pl.DataFrame) -> dict[str, pl.DataFrame]:
    return {d.isoformat(): g.drop("date") for (d,), g in df.group_by(["date"])} if df.height else {}


def _drop_hive(df: pl.DataFrame) -> pl.DataFrame:
    return df.drop([c for c in ("date", "variant") if c in df.columns])


def labels_reader(lake: Lake, cal: TradingCalendar, s: Settings):
    """Decision day -> its labels as the loop needs them: the lake's partition, or, when it is not
    there yet or was written before some horizon matured (the daily loop: the matured_feedback
    sensor re-materialises it, but not necessarily before the next decision run; a backfill may run
    the loop before `labels`), recomputed from the prices now in the lake with the same function, so
    the memory never misses feedback that has matured. Only horizons matured by the day before the
    decision are used, so prices after the decision time change nothing the loop reads."""

    @lru_cache(maxsize=None)  # a family's variants each step through every day: read (or recompute) a day once
    def labels_of(d: str) -> pl.DataFrame:
        lab = lake.read("labels", dates=[d]) if lake.exists("labels", date=d) else None
        if lab is None or (lab.height and (lab["status"] == "pending").any()):
            fresh = pl.from_arrow(conform(lake.spec("labels"), labels_from_lake(lake, cal, s, [d]).drop("date")))
            return fresh.with_columns(pl.lit(dt.date.fromisoformat(d)).alias("date"))  # as Lake.read adds it
        return lab

    return labels_of


def build_env(
    s: Settings, lake: Lake, cal: TradingCalendar, days: list[str], backend, params: MemoryParams, decoding: dict, toe_needed: bool = False
) -> LoopEnv:
    """The loop's environment for ``days``: their anchors, pools, cards and cited evidence, labels,
    the stored outputs of earlier days, the class weights per split (and the toe inputs)."""
    anchors = _by_day(lake.read("anchors", dates=days))
    cands = _by_day(lake.read("candidates", dates=days))
    cards = _by_day(lake.read("context_cards", dates=days))
    uni = lake.read("universe")
    companies = dict(zip(uni["ticker"], uni["company"]))
    pids = []
    for c in cands.values():
        pids += c["passage_id"].to_list()
    # contexts of the days before the range are re-read from the lake when feedback needs them
    evidence = evidence_items(lake, pids)
    fmap = map_passages(family_map(s), lake, pids)
    empty_a = pl.from_arrow(lake.spec("anchors").schema.empty_table())
    empty_c = pl.from_arrow(lake.spec("candidates").schema.empty_table())

    def day_data(d: str) -> DayData:
        cd = cards.get(d)
        card_map = {t: (txt, risk) for t, txt, risk in zip(cd["ticker"], cd["card_text"], cd["risk_state"])} if cd is not None else {}
        return DayData(anchors.get(d, empty_a), cands.get(d, empty_c), card_map)

    labels_of = labels_reader(lake, cal, s)

    def past_of(d: str, v: Variant) -> Past | None:
        if not lake.exists("reader_outputs", variant=v.name, date=d):
            raise MissingInput(f"{v.name}: reader outputs of {d} are needed for feedback but not materialised; run the loop from the split start")
        out = _drop_hive(lake.read("reader_outputs", dates=[d], variant=v.name))
        ctx = _drop_hive(lake.read("contexts", dates=[d], variant=v.name))
        map_passages(fmap, lake, ctx["passage_id"].to_list())
        a = lake.read("anchors", dates=[d])
        return Past(out, ctx, memory_keys(a, v))

    weights_cache: dict[str, dict] = {}

    def weights(start: str) -> dict:
        if start not in weights_cache:
            weights_cache[start] = weights_for(s, cal, lake, start)[0]
        return weights_cache[start]

    toe = toe_env(s, lake, cal, anchors, backend) if toe_needed else None
    cache_store: dict[str, dict] = {}  # the reader cache of each day, read once for the family's variants
    return LoopEnv(
        toe=toe,
        cal=cal,
        day_data=day_data,
        split_start=lambda d: split_start_of(s, cal, d),
        class_weights=weights,
        labels_of=labels_of,
        past_of=past_of,
        evidence=evidence,
        companies=companies,
        backend=backend,
        cache_of=lambda d: PromptCache(lake, d, cache_store),
        decoding=decoding,
        m=s.retrieval.m,
        params=params,
        credit_rule=s.memory.credit,
        family_of=fmap,
    )


def toe_env(s: Settings, lake: Lake, cal: TradingCalendar, anchors_by_day: dict[str, pl.DataFrame], backend=None) -> ToEEnv:
    """The toe variants' inputs: the prior tree (experience_tree, tree_id ``prior``) on a day, the
    anchors' masked skeletons and their MiniLM vectors (cached per day, shared by the variants);
    with an LLM reader backend, the LLM judge/expander (answers cached with the reader's)."""
    from .embeddings import embed

    params = ToEParams.from_settings(s)
    if tuple(params.horizons) != tuple(HORIZON_KEYS):
        raise StepError(f"the toe variants need settings.experience.horizons = {HORIZON_KEYS} (the reader's), not {params.horizons}")
    names = company_names(lake)
    ev = s.evidence

    def prior(d: str) -> ExperienceTree:
        if not lake.exists("experience_tree", tree_id=TREE_ID, date=d):
            raise MissingInput(f"experience_tree (tree_id {TREE_ID}) for {d} is not materialised; the toe variants start from it")
        return read_tree(lake, TREE_ID, d, params)

    done: dict[str, tuple] = {}

    def states(d: str):
        """The anchors' states of day ``d``; on the first call, every day of the range at once (one
        embedding call: fuller batches, the same vectors as day by day)."""
        if not done:
            per = {day: anchor_states(a, names) for day, a in sorted(anchors_by_day.items())}
            texts = [t for _, _, skels in per.values() for t in skels]
            vecs = embed(texts, ev.embed_batch_size, ev.embed_max_seq_length) if texts else np.zeros((0, 384), np.float32)
            i = 0
            for day, (ids, f_texts, skels) in per.items():
                done[day] = (ids, f_texts, skels, vecs[i : i + len(skels)])
                i += len(skels)
        return done.get(d) or ([], [], [], np.zeros((0, 384), np.float32))

    def past_selections(d: str, v: Variant) -> pl.DataFrame:
        if not lake.exists("principle_selections", variant=v.name, date=d):
            raise MissingInput(
                f"{v.name}: principle_selections of {d} are needed for the tree's updates but not materialised; run the loop from the split start"
            )
        return _drop_hive(lake.read("principle_selections", dates=[d], variant=v.name))

    judge = None
    if backend is not None and getattr(backend, "name", "embedded") != "embedded":
        from .experience.llm import llm_judge

        judge = llm_judge(backend)
    return ToEEnv(
        prior=prior,
        states=states,
        past_selections=past_selections,
        expansion_cap=s.experience.expansion_cap,
        judge=judge,
        embed_fn=lambda texts: embed(texts, ev.embed_batch_size, ev.embed_max_seq_length),
    )


# ------------------------------------------------------------------ the state of the day before a range
def initial_tree(lake: Lake, cal: TradingCalendar, s: Settings, v: Variant, first: str) -> ExperienceTree | None:
    """A toe variant's tree of the day before ``first`` (None at a split start: it resets to the prior)."""
    if not v.toe or first == split_start_of(s, cal, first):
        return None
    prev = cal.offset(first, -1).isoformat()
    if not lake.exists("experience_tree", tree_id=v.name, date=prev):
        raise MissingInput(
            f"{v.name}: experience_tree (tree_id {v.name}) for {prev} is missing; materialise from the split start {split_start_of(s, cal, first)}"
        )
    return read_tree(lake, v.name, prev, ToEParams.from_settings(s))


def initial_memory(lake: Lake, cal: TradingCalendar, s: Settings, v: Variant, first: str, params: MemoryParams) -> SourceMemory | None:
    """The snapshot of the day before ``first`` (None at a split start: the memory resets)."""
    if not v.uses_memory or first == split_start_of(s, cal, first):
        return None
    prev = cal.offset(first, -1).isoformat()
    if not lake.exists("memory_snapshot", variant=v.name, date=prev):
        raise MissingInput(f"{v.name}: memory_snapshot for {prev} is missing; materialise from the split start {split_start_of(s, cal, first)}")
    snap = _drop_hive(lake.read("memory_snapshot", dates=[prev], variant=v.name))
    return SourceMemory.from_frame(snap, params, family_map(s).families)


# ------------------------------------------------------------------ a family's loop, written
class FamilyIncomplete(RuntimeError):
    """The reader left anchors of ``variant`` unanswered (``error``, a ReaderIncomplete): that
    variant's days are not written; the answers so far are in reader_cache."""

    def __init__(self, variant: str, error: ReaderIncomplete):
        self.variant, self.error = variant, error
        super().__init__(f"{variant}: {error}")


@dataclass
class FamilyRun:
    """What :func:`run_family` wrote, for the assets' metadata."""

    test_note: str
    written: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("memory_snapshot", "contexts", "reader_outputs", "experience_tree", "experience_leaves", "principle_selections", "principle_updates"), 0
        )
    )
    toe_outcomes: dict[str, int] = field(default_factory=dict)
    last_tree: tuple[str, str, pa.Table] | None = None  # (variant, day, the tree's rows) of the last toe day written
    previews: dict[str, pl.DataFrame] = field(default_factory=dict)  # first reader outputs/contexts, last snapshot
    feedback_applied: int = 0
    stats: DayStats = field(default_factory=DayStats)
    skipped: dict[str, int] = field(default_factory=dict)  # LoRA variants: days before the test split, not read
    families: dict = field(default_factory=dict)  # memory.families other than seed000: the scheme, passages per family, unlisted publishers
    by_day: dict[str, dict[str, int]] = field(default_factory=dict)  # table -> decision day -> rows written (all variants)
    answers: dict[str, dict[str, int]] = field(default_factory=dict)  # decision day -> answer_tally, summed over the variants

    def count(self, table: str, day: str, n: int) -> None:
        """Add ``n`` rows of ``table`` written for ``day`` (to the run's total and the day's)."""
        self.written[table] += n
        per_day = self.by_day.setdefault(table, {})
        per_day[day] = per_day.get(day, 0) + n

    def count_answers(self, day: str, outputs: pl.DataFrame) -> None:
        """:meth:`count` the reader outputs written for ``day`` and add up their :func:`answer_tally`."""
        self.count("reader_outputs", day, outputs.height)
        mine = self.answers.setdefault(day, {})
        for k, n in answer_tally(outputs).items():
            mine[k] = mine.get(k, 0) + n


SIGNALS = (-1, 0, 1)


def answer_tally(outputs: pl.DataFrame) -> dict[str, int]:
    """What the checks of a reader's answers read (reader_outputs rows): answers, those that parsed,
    ids cited, those that are in the context, and the parsed answers per signal (``signal_+1``...)."""
    parsed = outputs.filter(pl.col("valid_json"))
    return {
        "answers": outputs.height,
        "parsed": parsed.height,
        "cited": int(outputs["cited_ids"].list.len().sum() or 0),
        "cited_in_context": int(outputs["valid_ids"].list.len().sum() or 0),
        **{f"signal_{s:+d}": int((parsed["signal"] == s).sum()) for s in SIGNALS},
    }


def run_family(
    at: DayRun,
    variants: list[Variant],
    params: MemoryParams,
    backend,
    decoding: dict,
    params_overridden: bool = False,
    on_day: Callable[[str], None] | None = None,
    backend_for: Callable[[Variant], object] | None = None,
) -> FamilyRun:
    """Step every variant of a family over ``at.days`` (from the state of the day before) and write
    its memory snapshots, experience trees, contexts and reader outputs, variant after variant.
    A LoRA variant (``lora_seed`` set) reads with ``backend_for(variant)`` (base model + its
    adapter; :func:`..lora_train.lora_backends`). Raises :class:`FamilyIncomplete` when the reader
    leaves anchors unanswered."""
    s, lake, cal, days = at.settings, at.lake, at.cal, at.days
    uses_memory, uses_toe = variants[0].uses_memory, variants[0].toe
    env = build_env(s, lake, cal, days=days, backend=backend, params=params, decoding=decoding, toe_needed=uses_toe)
    if uses_memory:
        env.params_of, test_note = test_split_params(s, lake, cal, params, days, params_overridden)
    else:
        test_note = "no source memory in this family"
    run = FamilyRun(test_note)
    if env.family_of is not None and not env.family_of.identity:
        run.families = families_note(env.family_of)
    written, toe_outcomes, previews = run.written, run.toe_outcomes, run.previews
    for v in variants:
        v = replace(v, lam=params.lam if v.uses_memory else 0.0)
        v_days = days
        if v.lora_seed is not None:
            if backend_for is None:
                raise StepError(f"{v.name}: a LoRA variant needs its adapter's backend (run_family(backend_for=...))")
            v_days = lora_days(s, cal, days)  # none before the test split: the adapter saw those labels
            if not v_days:
                run.skipped[v.name] = len(days)
                continue
            run.skipped[v.name] = len(days) - len(v_days)
            env.backend = backend_for(v)
        mem = initial_memory(lake, cal, s, v, v_days[0], env.params_of(v_days[0]) if env.params_of else params)
        tree0 = initial_tree(lake, cal, s, v, v_days[0])
        try:
            results = run_days(v_days, v, env, mem, tree0, on_day=on_day)
        except ReaderIncomplete as e:  # answers so far are in reader_cache; this variant's days are not written
            raise FamilyIncomplete(v.name, e) from None
        known = known_before(lake, v.name, days[0]) if v.toe else None
        for res in results:
            if res.tree is not None:
                known, n_content = write_rows(lake, v.name, res.day, res.tree, known)
                written["experience_leaves"] += n_content
                lake.write("principle_selections", res.selections, variant=v.name, date=res.day)
                lake.write("principle_updates", res.toe_updates, variant=v.name, date=res.day)
                run.count("experience_tree", res.day, res.tree.num_rows)
                written["principle_selections"] += res.selections.height
                written["principle_updates"] += res.toe_updates.height
                for o, k in res.selections.group_by("outcome").len().rows():
                    toe_outcomes[o] = toe_outcomes.get(o, 0) + k
                for o, k in res.toe_updates.group_by("outcome").len().rows():
                    toe_outcomes[f"update_{o}"] = toe_outcomes.get(f"update_{o}", 0) + k
                run.last_tree = (v.name, res.day, res.tree)
            if res.snapshot is not None:
                lake.write("memory_snapshot", res.snapshot, variant=v.name, date=res.day)
                run.count("memory_snapshot", res.day, res.snapshot.height)
            lake.write("contexts", res.contexts, variant=v.name, date=res.day)
            lake.write("reader_outputs", res.outputs, variant=v.name, date=res.day)
            run.count("contexts", res.day, res.contexts.height)
            run.count_answers(res.day, res.outputs)
            run.feedback_applied += int(res.feedback_applied["applied"].sum()) if res.feedback_applied.height else 0
            run.stats.merge(res.stats)
            if res.outputs.height and "reader_outputs" not in previews:
                previews["reader_outputs"] = res.outputs
                previews["contexts"] = res.contexts
            if res.snapshot is not None:
                previews["memory_snapshot"] = res.snapshot
    return run


@dataclass
class FamilyFeedback:
    """What :func:`family_feedback` wrote: rows, the last market day seen, outcomes, correctness."""

    rows: int
    as_of: dt.date
    outcomes: dict[str, int]
    correct: list
    families: dict = field(default_factory=dict)  # as FamilyRun.families
    by_day: dict[str, int] = field(default_factory=dict)  # decision day -> feedback rows written (all variants)


def family_feedback(s: Settings, lake: Lake, cal: TradingCalendar, variants: list[Variant], days: list[str]) -> FamilyFeedback:
    """Write the lineage of the memory updates of each variant and day (feedback): every anchor and
    horizon whose label has matured by the last market day in prices, with prediction, label,
    credited families and weight."""
    market = s.market_ticker
    last = lake.read_range("prices", days[0], s.calendar.end, columns=["ticker"]).filter(pl.col("ticker") == market)["date"].max()
    as_of = last if last is not None else dt.date.fromisoformat(days[0]) - dt.timedelta(days=1)
    n = 0
    outcomes: dict[str, int] = {}
    correct: dict[str, list] = {v.name: [] for v in variants}
    by_day: dict[str, int] = {}
    weights: dict[str, dict] = {}  # by split start: the labels behind them are read once, not once per day and variant
    fmap = family_map(s)
    for block in _blocks(days):
        labels_of, anchors_of = (
            _day_reader(lake, "labels", block, hive=True),
            _day_reader(lake, "anchors", block),
        )  # shared by the variants; the labels keep their date, which shuffle_labels groups by
        for v in variants:
            mine = lora_days(s, cal, block) if v.lora_seed is not None else block
            outs, ctxs = _day_reader(lake, "reader_outputs", mine, variant=v.name), _day_reader(lake, "contexts", mine, variant=v.name)
            for d in mine:
                start = split_start_of(s, cal, d)
                if start not in weights:
                    weights[start] = weights_for(s, cal, lake, start)[0]
                frames = _DayFrames(out=outs(d), ctx=ctxs(d), lab=labels_of(d), anchors=anchors_of(d))
                fb = _day_feedback(s, lake, fmap, v, frames, as_of=as_of, w=weights[start])
                lake.write("feedback", fb, variant=v.name, date=d)
                n += fb.height
                by_day[d] = by_day.get(d, 0) + fb.height
                for o, k in fb.group_by("outcome").len().rows():
                    outcomes[o] = outcomes.get(o, 0) + k
                correct[v.name] += fb.filter(pl.col("correct").is_not_null())["correct"].to_list()
    return FamilyFeedback(
        n, as_of, outcomes, [c for v in variants for c in correct[v.name]], {} if fmap.identity else families_note(fmap), by_day=by_day
    )


@dataclass(frozen=True)
class _DayFrames:
    """One variant's decision day as its feedback reads it: reader outputs, contexts, labels and anchors."""

    out: pl.DataFrame
    ctx: pl.DataFrame
    lab: pl.DataFrame
    anchors: pl.DataFrame


def _day_feedback(s: Settings, lake: Lake, fmap: FamilyMap, v: Variant, frames: _DayFrames, as_of: dt.date, w: dict) -> pl.DataFrame:
    """The feedback rows of one variant and decision day (seed 000 eq. 4-5 credit, per matured horizon)."""
    out, ctx, lab, anchors = frames.out, frames.ctx, frames.lab, frames.anchors
    if v.shuffle_labels_seed is not None:
        lab = shuffle_labels(lab, v.shuffle_labels_seed)
    if not fmap.identity:
        map_passages(fmap, lake, ctx["passage_id"].to_list())
    return build_feedback(
        out,
        lab,
        ctx,
        as_of_day=as_of,
        weights=w,
        memory_key=memory_keys(anchors, v),
        how=CreditRule(v.credit if v.uses_memory else "cited", s.memory.credit, fmap),
    )


BLOCK_DAYS = 64  # decision days read at once by family_feedback: one scan per table, memory bounded by the block


def _blocks(days: list[str], size: int = BLOCK_DAYS) -> list[list[str]]:
    return [days[i : i + size] for i in range(0, len(days), size)]


def _day_reader(lake: Lake, table: str, days: list[str], hive: bool = False, **keys) -> Callable[[str], pl.DataFrame]:
    """Day -> ``table``'s partition of that day, every day of ``days`` read in one scan: the same
    frame as reading each day alone (its hive keys dropped unless ``hive``); a day with no
    partition gives an empty frame."""
    df = lake.read(table, dates=list(dict.fromkeys(days)), **keys)
    parts = df.partition_by("date", as_dict=True, maintain_order=True) if df.height else {}
    shape = df.clear() if hive else _drop_hive(df.clear())

    def of(d: str) -> pl.DataFrame:
        part = parts.get((dt.date.fromisoformat(d),))
        return shape if part is None else part if hive else _drop_hive(part)

    return of
