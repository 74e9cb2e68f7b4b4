"""The memory variants as first-class Dagster assets: one asset group per variant family.

Design: an asset factory. Each variant family (no_memory, source_memory, top5_all_source,
shuffled_labels, shuffled_event_types) gets its own assets ``<family>/memory_snapshot``,
``<family>/contexts``, ``<family>/reader_outputs`` (one multi-asset, because contexts on D depend
on feedback from D-2 and earlier, so the three must be stepped day by day together) and
``<family>/feedback``. All families share anchors, candidates and labels; each writes its rows under
``variant=<name>`` in the shared tables, and a shuffled family writes its seeds as
``<family>_s0..s4``. A family is a row in the asset graph you can materialise, backfill and
inspect on its own; we chose this over a variant partition dimension because Dagster records
every asset-partition (~15-40 ms each) and a second dimension would multiply that bookkeeping by
the number of variants and seeds, and over a column-only variant because the UI then hides it.
"""

import datetime as dt
from functools import lru_cache

import dagster as dg
import numpy as np
import polars as pl
import pyarrow as pa

from ...core.calendar import TradingCalendar
from ...core.lake import Lake, conform
from ...core.progress import Progress
from ...core.loop import DayData, LoopEnv, Past, ToEEnv, Variant, memory_keys, run_days, variants_of
from ...core.memory.experience_loop import anchor_states
from ...core.memory.experience_store import known_before, read_tree, write_rows
from ...core.memory.experience_tree import ExperienceTree, from_table, render_markdown
from ...core.memory.feedback import build_feedback, label_frequencies, shuffle_labels
from ...core.memory.source_memory import MemoryParams, SourceMemory, class_weights
from ...core.reader.backends import BackendConfig, make_backend
from ...core.reader.cache import PromptCache
from ...core.reader.prompt import EvidenceItem
from ...core.reader.run import DayStats, ReaderIncomplete
from ...core.settings import Settings
from ..context import days_of
from ..reporting import check_schema, preview_md
from ..resources import FinragResource
from .experience import toe_params
from ...core.labels import labels_from_lake

class ReaderConfig(dg.Config):
    """Which reader answers (defaults from settings.reader); memory strength (settings.memory)."""

    backend: str = ""
    model: str = ""
    base_url: str = ""
    lam: float = -1.0
    delta: float = -1.0
    kappa: float = -1.0


def backend_config(s: Settings, cfg: ReaderConfig | None = None) -> BackendConfig:
    r = s.reader
    return BackendConfig(
        backend=(cfg.backend if cfg and cfg.backend else r.backend),
        embedded=r.embedded,
        model=(cfg.model if cfg and cfg.model else r.model),
        base_url=(cfg.base_url if cfg and cfg.base_url else r.base_url),
        api_key_env=r.api_key_env, response_format=r.response_format, concurrency=r.concurrency, timeout_s=r.timeout_s,
        retries=r.retries, backoff_base_s=r.backoff_base_s, backoff_max_s=r.backoff_max_s,
        max_tokens=r.max_tokens, n_ctx=r.n_ctx, tensor_parallel_size=r.tensor_parallel_size,
        gpu_memory_utilization=r.gpu_memory_utilization, max_model_len=r.max_model_len,
    )


def memory_params(s: Settings, cfg: ReaderConfig | None = None) -> MemoryParams:
    m = s.memory
    pick = lambda v, d: d if v is None or v < 0 else v  # noqa: E731
    return MemoryParams(kappa=pick(cfg.kappa if cfg else None, m.kappa), delta=pick(cfg.delta if cfg else None, m.delta), lam=pick(cfg.lam if cfg else None, m.lam))


def test_split_params(s: Settings, lake: Lake, cal: TradingCalendar, base: MemoryParams, cfg: ReaderConfig | None, days: list[str]):
    """(params for a decision day, a line saying what the test split uses).

    With ``memory.test_params = "selected"`` the test split runs with Table 6's selection (the
    ``sensitivity`` table: chosen on the validation split from labels matured before the test split
    starts, so it is known on the test split's first day); run-config λ/δ overrides win over it.
    A range with test-split days and no selection in the lake is an error, not a silent default."""
    bounds = split_bounds(s, cal)
    test = next(((a, b) for (a, b), name in zip(bounds, ("train", "validation", "test")) if name == "test"), None) if len(bounds) == 3 else None
    if test is None:
        return (lambda d: base), "no test split in the calendar"
    overridden = cfg is not None and (cfg.lam >= 0 or cfg.delta >= 0)
    if s.memory.test_params != "selected" or overridden:
        why = "run config" if overridden else "settings.memory (memory.test_params = settings)"
        return (lambda d: base), f"test split: lambda={base.lam}, delta={base.delta} from {why}"
    if not any(test[0] <= d <= test[1] for d in days):
        return (lambda d: base), "no test-split day in this range"
    sel = lake.read("sensitivity").filter(pl.col("row") == "selected") if lake.partition_files("sensitivity") else pl.DataFrame()
    if sel.height < 2:
        raise dg.Failure(
            "memory.test_params = 'selected' but the Table 6 selection (asset `sensitivity`) is not in the lake; "
            "materialise `sensitivity` first (it needs only the validation split) or set memory.test_params = 'settings'"
        )
    vals = dict(zip(sel["metric"].to_list(), sel["value"].to_list()))
    chosen = MemoryParams(kappa=base.kappa, delta=float(vals["delta"]), lam=float(vals["lambda"]))
    return (lambda d: chosen if d >= test[0] else base), f"test split: lambda={chosen.lam}, delta={chosen.delta} selected on validation (Table 6)"


# ------------------------------------------------------------------ splits and class weights
def split_bounds(s: Settings, cal: TradingCalendar) -> list[tuple[str, str]]:
    """(first session, last session) of train / validation / test, in order."""
    out = []
    for a, b in (s.splits.train, s.splits.validation, s.splits.test):
        days = cal.sessions_in_range(a, b)
        if days:
            out.append((days[0].isoformat(), days[-1].isoformat()))
    return out


def split_start_of(s: Settings, cal: TradingCalendar, day: str) -> str:
    """The day the memory resets for a decision on ``day`` (prequential protocol)."""
    for a, b in split_bounds(s, cal):
        if a <= day <= b:
            return a
    first = cal.sessions_in_range(s.calendar.decision_start, s.calendar.end)
    return first[0].isoformat() if first and first[0].isoformat() <= day else day


def weights_for(s: Settings, cal: TradingCalendar, lake: Lake, start: str) -> tuple[dict, dict]:
    """w_y = 1/(3 pi_y) with pi from the previous split's labels that matured before ``start``
    (for the test split: the validation split). Uniform when there is no previous split."""
    bounds = split_bounds(s, cal)
    prev = [b for b in bounds if b[1] < start]
    if not prev:
        return {h: {y: 1.0 for y in (-1, 0, 1)} for h in ("1D", "3D", "5D")}, {}
    a, b = prev[-1]
    lab = lake.read_range("labels", a, b)
    lab = lab.filter(pl.col("maturity_day") < dt.date.fromisoformat(start))
    freq = label_frequencies(lab)
    if not freq:
        return {h: {y: 1.0 for y in (-1, 0, 1)} for h in ("1D", "3D", "5D")}, {}
    return class_weights(freq), freq


# ------------------------------------------------------------------ reading inputs
def evidence_items(lake: Lake, passage_ids: list[str]) -> dict[str, EvidenceItem]:
    if not passage_ids:
        return {}
    con = lake.duckdb(tables=["evidence"])
    con.register("wanted", pa.table({"passage_id": pa.array(sorted(set(passage_ids)))}))
    rows = con.execute(
        "SELECT e.passage_id, source_family, title, text, public_time, form_type, item FROM evidence e "
        "JOIN wanted w USING (passage_id)"
    ).fetchall()
    con.close()
    return {r[0]: EvidenceItem(r[0], r[1], r[2], r[3], r[4].isoformat(), r[5], r[6]) for r in rows}


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

    @lru_cache(maxsize=64)
    def labels_of(d: str) -> pl.DataFrame:
        lab = lake.read("labels", dates=[d]) if lake.exists("labels", date=d) else None
        if lab is None or (lab.height and (lab["status"] == "pending").any()):
            fresh = pl.from_arrow(conform(lake.spec("labels"), labels_from_lake(lake, cal, s, [d]).drop("date")))
            return fresh.with_columns(pl.lit(dt.date.fromisoformat(d)).alias("date"))  # as Lake.read adds it
        return lab

    return labels_of


def build_env(s: Settings, lake: Lake, cal: TradingCalendar, days: list[str], backend, params: MemoryParams, decoding: dict,
              toe_needed: bool = False) -> LoopEnv:
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
    empty_a = pl.from_arrow(lake.spec("anchors").schema.empty_table())
    empty_c = pl.from_arrow(lake.spec("candidates").schema.empty_table())

    def day_data(d: str) -> DayData:
        cd = cards.get(d)
        card_map = {t: (txt, risk) for t, txt, risk in zip(cd["ticker"], cd["card_text"], cd["risk_state"])} if cd is not None else {}
        return DayData(anchors.get(d, empty_a), cands.get(d, empty_c), card_map)

    labels_of = labels_reader(lake, cal, s)

    def past_of(d: str, v: Variant) -> Past | None:
        if not lake.exists("reader_outputs", variant=v.name, date=d):
            raise dg.Failure(f"{v.name}: reader outputs of {d} are needed for feedback but not materialised; run the loop from the split start")
        out = _drop_hive(lake.read("reader_outputs", dates=[d], variant=v.name))
        ctx = _drop_hive(lake.read("contexts", dates=[d], variant=v.name))
        a = lake.read("anchors", dates=[d])
        return Past(out, ctx, memory_keys(a, v))

    weights_cache: dict[str, dict] = {}

    def weights(start: str) -> dict:
        if start not in weights_cache:
            weights_cache[start] = weights_for(s, cal, lake, start)[0]
        return weights_cache[start]

    toe = toe_env(s, lake, cal, anchors, backend) if toe_needed else None
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
        cache_of=lambda d: PromptCache(lake, d),
        decoding=decoding,
        m=s.retrieval.m,
        params=params,
    )


def toe_env(s: Settings, lake: Lake, cal: TradingCalendar, anchors_by_day: dict[str, pl.DataFrame], backend=None) -> ToEEnv:
    """The toe variants' inputs: the prior tree (experience_tree, tree_id ``prior``) on a day, the
    anchors' masked skeletons and their MiniLM vectors (cached per day, shared by the variants);
    with an LLM reader backend, the LLM judge/expander (answers cached with the reader's)."""
    from ...core.embeddings import embed
    from ...core.settings import HORIZON_KEYS
    from .experience import TREE_ID, company_names, toe_params

    params = toe_params(s)
    if tuple(params.horizons) != tuple(HORIZON_KEYS):
        raise dg.Failure(f"the toe variants need settings.experience.horizons = {HORIZON_KEYS} (the reader's), not {params.horizons}")
    names = company_names(lake)
    ev = s.evidence

    def prior(d: str) -> ExperienceTree:
        if not lake.exists("experience_tree", tree_id=TREE_ID, date=d):
            raise dg.Failure(f"experience_tree (tree_id {TREE_ID}) for {d} is not materialised; the toe variants start from it")
        return read_tree(lake, TREE_ID, d, params)

    @lru_cache(maxsize=8)
    def states(d: str):
        a = anchors_by_day.get(d)
        ids, f_texts, skels = anchor_states(a, names) if a is not None else ([], [], [])
        vecs = embed(skels, ev.embed_batch_size, ev.embed_max_seq_length) if skels else np.zeros((0, 384), np.float32)
        return ids, f_texts, skels, vecs

    def past_selections(d: str, v: Variant) -> pl.DataFrame:
        if not lake.exists("principle_selections", variant=v.name, date=d):
            raise dg.Failure(f"{v.name}: principle_selections of {d} are needed for the tree's updates but not materialised; run the loop from the split start")
        return _drop_hive(lake.read("principle_selections", dates=[d], variant=v.name))

    judge = None
    if backend is not None and getattr(backend, "name", "embedded") != "embedded":
        from ...core.memory.experience_llm import llm_judge

        judge = llm_judge(backend)
    return ToEEnv(prior=prior, states=states, past_selections=past_selections, expansion_cap=s.experience.expansion_cap,
                  judge=judge, embed_fn=lambda texts: embed(texts, ev.embed_batch_size, ev.embed_max_seq_length))


def initial_tree(lake: Lake, cal: TradingCalendar, s: Settings, v: Variant, first: str) -> ExperienceTree | None:
    """A toe variant's tree of the day before ``first`` (None at a split start: it resets to the prior)."""
    from .experience import toe_params

    if not v.toe or first == split_start_of(s, cal, first):
        return None
    prev = cal.offset(first, -1).isoformat()
    if not lake.exists("experience_tree", tree_id=v.name, date=prev):
        raise dg.Failure(f"{v.name}: experience_tree (tree_id {v.name}) for {prev} is missing; materialise from the split start {split_start_of(s, cal, first)}")
    return read_tree(lake, v.name, prev, toe_params(s))


def initial_memory(lake: Lake, cal: TradingCalendar, s: Settings, v: Variant, first: str, params: MemoryParams) -> SourceMemory | None:
    """The snapshot of the day before ``first`` (None at a split start: the memory resets)."""
    if not v.uses_memory or first == split_start_of(s, cal, first):
        return None
    prev = cal.offset(first, -1).isoformat()
    if not lake.exists("memory_snapshot", variant=v.name, date=prev):
        raise dg.Failure(f"{v.name}: memory_snapshot for {prev} is missing; materialise from the split start {split_start_of(s, cal, first)}")
    return SourceMemory.from_frame(_drop_hive(lake.read("memory_snapshot", dates=[prev], variant=v.name)), params)


def reader_metadata(st: DayStats) -> dict:
    mix = {h: {f"{k:+d}": round(v / max(1, sum(c.values())), 3) for k, v in c.items()} for h, c in st.label_mix.items()}
    return {
        "anchors": st.anchors,
        "valid_json_rate": round(st.valid_json / st.anchors, 4) if st.anchors else 0.0,
        "valid_citation_rate": round(st.horizons_with_valid_citation / st.horizons, 4) if st.horizons else 0.0,
        "cache_hits": st.cache_hits,
        "cache_misses": st.cache_misses,
        "label_mix": dg.MetadataValue.json(mix),
        "prompt_tokens_per_anchor": round(st.prompt_tokens / st.anchors, 1) if st.anchors else 0.0,
        "output_tokens_per_anchor": round(st.output_tokens / st.anchors, 1) if st.anchors else 0.0,
        "latency_ms_per_anchor_uncached": round(st.latency_ms / max(1, st.cache_misses), 2),
        "backend_errors": len(st.errors),
        "requests": st.requests,
        "retries": st.retries,
        "failures": st.failures,
        "anchors_completed": st.anchors_completed,
    }


def build_variant_assets(family: str, partitions_def, settings: Settings) -> list[dg.AssetsDefinition]:
    vs = variants_of(family, settings.memory.lam, settings.variants.shuffle_seeds)
    uses_memory = vs[0].uses_memory
    uses_toe = vs[0].toe
    key = lambda t: dg.AssetKey([family, t])  # noqa: E731
    tw = lambda a, b: dg.TimeWindowPartitionMapping(start_offset=a, end_offset=b, allow_nonexistent_upstream_partitions=True)  # noqa: E731
    # Dependencies per output. Every output of the family reads the same inputs of day D (pools,
    # anchors, cards, evidence; the prior tree for a toe family), and each state (memory, tree)
    # also carries its own previous partition forward: no cycle between assets besides those
    # self-dependencies. Contexts of D use D's memory and tree, and the states use the labels
    # matured by D-1 (decision days D-6 .. D-2) and this family's outputs of those days; these are
    # computed inside this multi-asset, stepped day by day, and not declared between its outputs:
    # a dependency of the states on the outputs would be a cycle, a lagged labels mapping would make
    # a backfill of days a..b also target the states of b+1 .. b+6 (Dagster follows a mapping
    # downstream), and outputs of one multi-asset must reach a backfill's target the same way or
    # the UI refuses to launch it. The descriptions say what each output reads.
    common = ["candidates", "anchors", "context_cards", "evidence", *(["experience_tree"] if uses_toe else [])]
    specs = []
    if uses_memory:
        specs.append(dg.AssetSpec(
            key("memory_snapshot"), kinds={"parquet"},
            deps=[*common, dg.AssetDep(key("memory_snapshot"), partition_mapping=tw(-1, -1))],
            description="Source-memory cells used on D: the state of D-1 updated with the feedback whose labels matured by D-1 "
                        "(decision days D-6 .. D-2, read from `labels` and this family's reader outputs); reset at each split start.",
        ))
    if uses_toe:
        specs.append(dg.AssetSpec(
            key("experience_tree"), kinds={"parquet"},
            deps=[*common, dg.AssetDep(key("experience_tree"), partition_mapping=tw(-1, -1))],
            description="This family's Tree-of-Experience per decision day (experience_tree, tree_id = variant): the prior tree at "
                        "each split start, then eq. 13 updates from the labels matured by D-1 (read from `labels`) and D's selections/expansions; "
                        "the day's state in experience_tree, the content of new or changed positions (principle, embedding) once in "
                        "experience_leaves dated D; with principle_selections (the path each anchor used) and principle_updates (every eq. 13 update).",
        ))
    specs.append(dg.AssetSpec(key("contexts"), kinds={"parquet"}, deps=common,
                              description="Top-M context per anchor by r + lambda * mean_h adj, with D's memory snapshot (and principle, for a toe family)."))
    specs.append(dg.AssetSpec(key("reader_outputs"), kinds={"parquet"}, deps=common,
                              description="Reader signals per anchor and horizon with cited IDs, read from D's contexts and market cards."))

    @dg.multi_asset(
        name=f"{family}_loop",
        specs=specs,
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        can_subset=False,
        group_name=family,
        description=f"The feedback loop of variant family `{family}` ({', '.join(v.name for v in vs)}), stepped day by day.",
    )
    def loop(context: dg.AssetExecutionContext, config: ReaderConfig, finrag: FinragResource):
        s = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        params = memory_params(s, config)
        bcfg = backend_config(s, config)
        backend = make_backend(bcfg)
        env = build_env(s, lake, cal, days, backend, params, bcfg.decoding(), toe_needed=uses_toe)
        if uses_memory:
            env.params_of, test_note = test_split_params(s, lake, cal, params, config, days)
        else:
            test_note = "no source memory in this family"
        total = DayStats()
        written = {"memory_snapshot": 0, "contexts": 0, "reader_outputs": 0, "experience_tree": 0, "experience_leaves": 0, "principle_selections": 0,
                   "principle_updates": 0}
        toe_outcomes: dict[str, int] = {}
        last_tree = None
        previews = {}
        applied = 0
        prog = Progress(len(days) * len(vs), f"{family} loop", log=context.log.info, every=20, unit="variant-days")
        for v in vs:
            v = Variant(v.name, v.family, params.lam if v.uses_memory else 0.0, v.credit, v.shuffle_labels_seed, v.shuffle_types_seed, v.toe)
            mem = initial_memory(lake, cal, s, v, days[0], env.params_of(days[0]) if env.params_of else params)
            tree0 = initial_tree(lake, cal, s, v, days[0])
            try:
                results = run_days(days, v, env, mem, tree0, on_day=lambda _d: prog.update())
            except ReaderIncomplete as e:  # answers so far are in reader_cache; this variant's days are not written
                failed = dict(list(e.stats.failed_anchors.items())[:20])
                raise dg.Failure(description=f"{v.name}: {e}", metadata={"backend": backend.name, **reader_metadata(e.stats),
                                                                         "failed_anchors": dg.MetadataValue.json(failed)}) from None
            known = known_before(lake, v.name, days[0]) if v.toe else None
            for res in results:
                if res.tree is not None:
                    known, n_content = write_rows(lake, v.name, res.day, res.tree, known)
                    written["experience_leaves"] += n_content
                    lake.write("principle_selections", res.selections, variant=v.name, date=res.day)
                    lake.write("principle_updates", res.toe_updates, variant=v.name, date=res.day)
                    written["experience_tree"] += res.tree.num_rows
                    written["principle_selections"] += res.selections.height
                    written["principle_updates"] += res.toe_updates.height
                    for o, k in res.selections.group_by("outcome").len().rows():
                        toe_outcomes[o] = toe_outcomes.get(o, 0) + k
                    for o, k in res.toe_updates.group_by("outcome").len().rows():
                        toe_outcomes[f"update_{o}"] = toe_outcomes.get(f"update_{o}", 0) + k
                    last_tree = (v.name, res.day, res.tree)
                if res.snapshot is not None:
                    lake.write("memory_snapshot", res.snapshot, variant=v.name, date=res.day)
                    written["memory_snapshot"] += res.snapshot.height
                lake.write("contexts", res.contexts, variant=v.name, date=res.day)
                lake.write("reader_outputs", res.outputs, variant=v.name, date=res.day)
                written["contexts"] += res.contexts.height
                written["reader_outputs"] += res.outputs.height
                applied += int(res.feedback_applied["applied"].sum()) if res.feedback_applied.height else 0
                total.merge(res.stats)
                if res.outputs.height and "reader_outputs" not in previews:
                    previews["reader_outputs"] = res.outputs
                    previews["contexts"] = res.contexts
                if res.snapshot is not None:
                    previews["memory_snapshot"] = res.snapshot
        prog.close()
        names = [v.name for v in vs]
        if uses_memory:
            snap = previews.get("memory_snapshot", pl.DataFrame())
            md = snap.filter(pl.col("n") > 0).sort("n", descending=True).head(12) if snap.height else snap
            yield dg.MaterializeResult(
                asset_key=key("memory_snapshot"),
                metadata={"rows": written["memory_snapshot"], "variants": ", ".join(names), "feedback_rows_applied": applied,
                          "last_snapshot": dg.MetadataValue.md(preview_md(md, n=12, columns=["source_family", "event_type", "horizon", "a", "b", "u_hat", "adjustment"]))},
            )
        if uses_toe:
            meta = {"rows": written["experience_tree"], "content_rows": written["experience_leaves"], "variants": ", ".join(names),
                    "selections": written["principle_selections"],
                    "updates": written["principle_updates"], "outcomes": dg.MetadataValue.json(toe_outcomes)}
            if last_tree is not None:
                vn, day, table = last_tree
                meta["tree"] = dg.MetadataValue.md(render_markdown(from_table(table, toe_params(s)), f"experience tree `{vn}` on {day}", max_leaves=12))
            yield dg.MaterializeResult(asset_key=key("experience_tree"), metadata=meta)
        yield dg.MaterializeResult(
            asset_key=key("contexts"),
            metadata={"rows": written["contexts"], "variants": ", ".join(names), "lambda": params.lam, "delta": params.delta, "kappa": params.kappa,
                      "test_split_params": test_note,
                      "preview": dg.MetadataValue.md(preview_md(previews.get("contexts", pl.DataFrame())))},
        )
        yield dg.MaterializeResult(
            asset_key=key("reader_outputs"),
            metadata={"rows": written["reader_outputs"], "backend": backend.name, "model": backend.model, **reader_metadata(total),
                      "preview": dg.MetadataValue.md(preview_md(previews.get("reader_outputs", pl.DataFrame()), columns=["anchor_id", "horizon", "signal", "valid_ids", "reason"]))},
        )

    @dg.asset(
        key=key("feedback"),
        group_name=family,
        kinds={"parquet"},
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=[key("reader_outputs"), key("contexts"), "labels"],
        description=(
            "Lineage of the memory updates of this family: per anchor and matured horizon the prediction, label, "
            "credited families and weight. Rows exist only once close(D+h) is in prices (keyed by decision day D)."
        ),
    )
    def feedback(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        market = s.market_ticker
        last = lake.read_range("prices", days[0], s.calendar.end, columns=["ticker"]).filter(pl.col("ticker") == market)["date"].max()
        as_of = last if last is not None else dt.date.fromisoformat(days[0]) - dt.timedelta(days=1)
        n = 0
        outcomes: dict[str, int] = {}
        correct = []
        for v in vs:
            for d in days:
                out = _drop_hive(lake.read("reader_outputs", dates=[d], variant=v.name))
                ctx = _drop_hive(lake.read("contexts", dates=[d], variant=v.name))
                lab = lake.read("labels", dates=[d])
                if v.shuffle_labels_seed is not None:
                    lab = shuffle_labels(lab, v.shuffle_labels_seed)
                a = lake.read("anchors", dates=[d])
                w, _ = weights_for(s, cal, lake, split_start_of(s, cal, d))
                fb = build_feedback(out, lab, ctx, as_of, w, memory_keys(a, v), v.credit) if v.uses_memory else build_feedback(out, lab, ctx, as_of, w, memory_keys(a, v), "cited")
                lake.write("feedback", fb, variant=v.name, date=d)
                n += fb.height
                for o, k in fb.group_by("outcome").len().rows():
                    outcomes[o] = outcomes.get(o, 0) + k
                correct += fb.filter(pl.col("correct").is_not_null())["correct"].to_list()
        return dg.MaterializeResult(
            metadata={"rows": n, "matured_as_of": str(as_of), "outcomes": dg.MetadataValue.json(outcomes),
                      "accuracy_matured": round(float(np.mean(correct)), 4) if correct else 0.0}
        )

    return [loop, feedback]
