"""Mutation testing of the point-in-time decision modules with mutmut 3 (docs/leaks.md, "Mutation testing").

The planted leaks of tests/leaks/ are the leaks someone thought of. Mutation testing asks the
opposite question: change any one operator, constant or argument of a decision module (``<`` to
``<=``, ``i - 1`` to ``i + 1``, ``-1`` to ``-2``) and see whether the tests covering it notice.

    .venv/bin/python scripts/mutants.py                 # every module of MODULES, within --time-limit
    .venv/bin/python scripts/mutants.py finrag_dagster/core/calendar.py core/evidence.py
    .venv/bin/python scripts/mutants.py --changed        # modules (or their tests) changed since origin/main
    .venv/bin/python scripts/mutants.py --changed HEAD~3 # ... since another base

Each module runs in its own folder ``mutants/<module>/`` (git-ignored): a ``pyproject.toml`` holding
the repository's ``[tool.mutmut]`` settings with this module's ``only_mutate`` and test files, links
to ``finrag_dagster/`` and ``tests/``, and mutmut's own ``mutants/`` copy and results, so a second
run only re-tests what changed. Survivors of earlier runs are always re-tested against the tests
as they are now. The script prints one line per module (killed / survived / timed out / no tests),
the survivors not listed in EQUIVALENT with the command that shows each, and the run's duration.
Exit status: 0, or 1 when a module has a survivor that is not a known equivalent (or did not finish).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "mutants"
PACKAGE = "finrag_dagster"
U = "tests/unit/"


@dataclass(frozen=True)
class Target:
    """A module to mutate: its test files and, for a large file, the only functions to mutate
    (``name`` or ``Class.method``; empty: every function of the file)."""

    path: str
    tests: tuple[str, ...]
    functions: tuple[str, ...] = ()


# The calendar's decision rule and session arithmetic (its file cache, tests/unit/test_calendar_cache.py, is not mutated)
CALENDAR_METHODS = ("sessions_in_range", "is_session", "session_index", "offset", "next_session", "previous_session", "close_time", "open_time")
CALENDAR_METHODS += ("decision_day", "decision_days", "decision_close_ns", "closes_for")

# The EDGAR loader's merge and its submissions JSON reader (two files of the sources/edgar/ package) share their tests:
# the loader's, the trust and bad-input cases, the cross-checks, and the reader's records by hand
EDGAR_TESTS = tuple(
    U + f
    for f in ("test_loaders_edgar.py", "test_edgar_trust.py", "test_edgar_submissions.py", "test_edgar_bad_inputs.py", "test_edgar_crosschecks.py")
)

# The point-in-time decision modules (docs/time.md, docs/method.md §1), each with the unit tests that cover it.
MODULES: tuple[Target, ...] = (
    Target("finrag_dagster/core/context_card.py", (U + "test_pit_guard.py", U + "test_dedup_cards_anchors.py")),
    Target(
        "finrag_dagster/core/calendar.py",
        (U + "test_pit_guard.py", U + "test_calendar.py"),
        tuple(f"TradingCalendar.{m}" for m in CALENDAR_METHODS)
        + ("_as_date", "date_only_public_time", "date_only_public_ns", "eastern_to_utc", "lookback_days", "maturing_on", "overdue_sessions"),
    ),
    Target("finrag_dagster/core/evidence.py", (U + "test_pit_guard.py",), ("pit_violations",)),
    Target("finrag_dagster/core/labels.py", (U + "test_pit_guard.py", U + "test_labels.py", U + "test_pit_labels.py")),
    Target(
        "finrag_dagster/core/loop.py", (U + "test_pit_loop.py", U + "test_loop_wiring.py"), ("_maturing_on", "matured_on", "toe_matured_on", "step")
    ),
    Target(
        "finrag_dagster/core/memory/feedback.py",
        (U + "test_pit_guard.py", U + "test_pit_feedback.py", U + "test_memory_stance.py", U + "test_memory_families.py"),
        ("build_feedback",),
    ),
    Target("finrag_dagster/core/loop_io.py", (U + "test_pit_guard.py", U + "test_pit_weights.py"), ("family_feedback", "weights_for")),
    Target("finrag_dagster/sources/news/clock.py", (U + "test_news_clock.py", U + "test_loaders_news.py", U + "test_news_clock_by_hand.py")),
    Target(
        "finrag_dagster/sources/news/read.py",
        (U + "test_news_clock.py", U + "test_loaders_news.py", U + "test_news_read_by_hand.py", U + "test_news_read_files.py"),
    ),
    Target("finrag_dagster/sources/news/rows.py", (U + "test_news_clock.py", U + "test_loaders_news.py", U + "test_news_rows_by_hand.py")),
    Target("finrag_dagster/sources/news/load.py", (U + "test_news_stage.py", U + "test_news_clock.py")),
    Target("finrag_dagster/sources/news/segment.py", (U + "test_news_stage.py", U + "test_news_clock.py", U + "test_news_segment_by_hand.py")),
    Target("finrag_dagster/sources/news/stage.py", (U + "test_news_stage.py", U + "test_news_clock.py", U + "test_news_stage_by_hand.py")),
    Target("finrag_dagster/sources/edgar/merge.py", EDGAR_TESTS, ("_merge_groups",)),
    Target("finrag_dagster/sources/edgar/submissions.py", EDGAR_TESTS, ("read_submissions_json",)),
    Target("finrag_dagster/core/retrieval/pool.py", (U + "test_retrieval_pool.py", U + "test_pit_retrieval.py")),
    Target("finrag_dagster/core/retrieval/search.py", (U + "test_pit_search.py",), ("SearchIndex.__init__",)),
    Target("finrag_dagster/core/evaluation/experience.py", (U + "test_pit_experience_task.py",), ("task_inputs",)),
    Target("finrag_dagster/core/experience/task.py", (U + "test_experience_task.py", U + "test_pit_experience_task.py")),
)

# Survivors that no test can kill because the program means the same with them (docs/leaks.md lists
# each with its reason): (module, function, the mutated line as `mutmut show` prints it after "+").
_CARD = "finrag_dagster/core/context_card.py"
_ONE_ROW = "polars' DataFrame.row() with no index returns the only row, and the frame has exactly one (checked just before)"
_ALL_DAYS = "reads every returns partition instead of the asked days; rows_on(rets, d) then takes the same rows of day d (slower, same cards)"
_EVIDENCE = "finrag_dagster/core/evidence.py"
_NO_BOUND = "the first session has no lower bound: any number at or below the smallest int64 time is still none"
_CAL = "finrag_dagster/core/calendar.py"
_UNIT = "_as_date always returns a datetime.date, which numpy makes datetime64[D] without being told the unit"
_SIDE = 'side="left" is np.searchsorted\'s default'
_UTC = 'pandas reads the zone "utc" as UTC (same instant, same zone object)'
_NS = "a naive copy of a UTC time has the same nanoseconds (.value, .asi8)"
_INT = "a Python int makes an int64 array without being told the dtype"
_DST = "23:59:59 New York is never in the repeated or the skipped hour (01:00-03:00), so the ambiguous/nonexistent rules never apply"
_LOCALIZE = "(idx + pd.Timedelta(hours=23, minutes=59, seconds=59)).tz_localize(NY, {})"
_DAY = "d = np.datetime64(_as_date(day), )"
_SEARCH = "np.searchsorted compares int64 and datetime64[ns] values by their nanoseconds, so the int64 conversion changes nothing"
_LOOP_IO = "finrag_dagster/core/loop_io.py"
_PRICES = 'lake.read_range("prices", days[0], s.calendar.end, {}).filter(pl.col("ticker") == market)["date"].max()'
_COLUMNS = "reads every column of prices instead of the ticker alone: the same rows, the same last market date"
_LOOP = "finrag_dagster/core/loop.py"
_RERANK = "contexts = rerank(data.candidates, keys, {}, {}, env.m, env.family_of)"
_NO_MEMORY = "a variant without memory never holds one (run_days starts from None and only a memory variant creates one), and with no memory rerank adds nothing whatever lambda is"
_RECENT = (
    "recent keeps the stored rows of D-7..D (or D-6..D, D-8..D); feedback on D+1 reads decision days down to D-5 (the 5D horizon), so no row changes"
)
_LABELS = "finrag_dagster/core/labels.py"
_INT64 = "Python ints make an int64 array without being told the dtype"
_NAN = "None stored into a float array is NaN, what np.nan stores"
_OK_END = "ok_end is none of the ends only when no window fits, and then the fit below adds nothing: every row stays NaN with 0 observations"
_DY = "dx is 0 wherever a row is left out and sums to 0 over the rows kept, so sum(dx * dy) is the same whatever dy holds there or adds as a constant"
_PANEL = "rows after the panel's last session stay NaN or hold bars after it; every row read is at most hi - lo and the last market bar is compared only with those"
_END0 = "a window that ends on row 0 holds at most one return, fewer than the 3 eq. 1 needs: alpha is NaN and the label insufficient either way"
_TASK = "finrag_dagster/core/experience/task.py"
_ROWS = "polars reads a list of tuples as rows without being told (orient)"
_CANCEL = "every value read is a difference of two running sums, so the value they start from cancels"
_HOLE = "a window holding a missing day is dropped by its count of missing days, whatever the missing day adds"
_PIVOT = "polars takes the one remaining column as the pivot's index (values)"
_SMALL_INTS = "the sort keys are the same small integers in whatever integer dtype"
_ALPHA_ONLY = "alpha is the only column that can be null"
_TICKER_ORDER = "shift(1).over('ticker') takes each ticker's previous row in frame order, which sorting by date alone keeps within a ticker"
_SIGN = "a note's outcome is sign(alpha): dividing by +-1 is multiplying by it"
_GROWING = "horizons grow: once T+h is past the sessions or crosses a missing day, every longer horizon is too"
_STABLE = "notes are listed in index order and the sort is stable: equal similarities keep index order either way"
_EVERY_METHOD = "what a scored input used holds an entry for every tree method, so the membership test is always true"
_NEW_LEAF = "a leaf just expanded has a recall count of 0"
_RET_ONLY = "ret is the only column that can be null (a price file's closes are never null: the loader quarantines them)"
_LOADED_ORDER = "the correlations are averaged in another order: the same value up to the mean's last bits (the test compares approximately)"
_CS_NOTE = "  # a (method, horizon) with nothing matured yet still gets its row, value null"
_CORR = ' if (c := _corr(d["score"].to_numpy(), d["alpha"].to_numpy())) is not None]'
_CS_ORDER = [f'g = g.drop_nulls("alpha").sort({a}){_CS_NOTE}' for a in ('"date", ', '"date", None', '"target"', 'None, "target"')]
_CS_ORDER += [f'vals = [c for (_,), d in g.group_by("date", {a})' + _CORR for a in ("", "maintain_order=False")]
_TS_ORDER = [f'g = g.drop_nulls("alpha").sort({a})' for a in ('"target", ', '"target", None', 'None, "date"', '"date"')]
_TS_ORDER += [f'vals = [c for (_,), d in g.group_by("target", {a})' + _CORR for a in ("", "maintain_order=False")]
TASK_EQUIVALENT = {
    (
        _TASK,
        "excess_returns",
        'rows, schema={"date": pl.Date, "target": pl.Utf8, "horizon": pl.Utf8, "alpha": pl.Float64, "maturity_day": pl.Date}, )',
    ): _ROWS,
    (
        _TASK,
        "excess_returns",
        'rows, schema={"date": pl.Date, "target": pl.Utf8, "horizon": pl.Utf8, "alpha": pl.Float64, "maturity_day": pl.Date}, orient=None',
    ): _ROWS,
    (_TASK, "run_task", "return pl.DataFrame(rows, schema=_TASK_SCORE_SCHEMA, )"): _ROWS,
    (_TASK, "run_task", "return pl.DataFrame(rows, schema=_TASK_SCORE_SCHEMA, orient=None)"): _ROWS,
    **{
        (_TASK, f, 'return pl.DataFrame(rows, schema={"method": pl.Utf8, "horizon": pl.Utf8, "value": pl.Float64, "n": pl.Int64}' + tail): _ROWS
        for f in ("cs_ic", "ts_ic")
        for tail in (", )", ", orient=None)")
    },
    (_TASK, "excess_returns", "cum = {c: np.concatenate([[1.0], np.cumsum(np.nan_to_num(v, nan=0.0))]) for c, v in g.items()}"): _CANCEL,
    (_TASK, "excess_returns", "gaps = {c: np.concatenate([[1], np.cumsum(np.isnan(v))]) for c, v in g.items()}"): _CANCEL,
    (_TASK, "excess_returns", "cum = {c: np.concatenate([[0.0], np.cumsum(np.nan_to_num(v, ))]) for c, v in g.items()}"): _HOLE,
    (_TASK, "excess_returns", "cum = {c: np.concatenate([[0.0], np.cumsum(np.nan_to_num(v, nan=1.0))]) for c, v in g.items()}"): _HOLE,
    (_TASK, "excess_returns", "g = {c: np.log1p(wide[c].to_numpy().astype(None)) for c in [*targets, market]}"): "numpy's default dtype is float64",
    **{
        (_TASK, "excess_returns", "wide = daily.pivot(" + a + ').sort("date")'): _PIVOT
        for a in ('"target", index="date", ', '"target", index="date", values=None', '"target", index=None, values="ret"', '"target", values="ret"')
    },
    (_TASK, "excess_returns", "break"): _GROWING,
    (_TASK, "result_tables", 'pl.col("horizon").replace_strict(hord, ).alias("_h"),'): _SMALL_INTS,
    (_TASK, "result_tables", 'pl.col("horizon").replace_strict(hord, return_dtype=None).alias("_h"),'): _SMALL_INTS,
    (_TASK, "result_tables", 'pl.col("method").replace_strict(order, ).alias("_o"),'): _SMALL_INTS,
    (_TASK, "result_tables", 'pl.col("method").replace_strict(order, return_dtype=None).alias("_o"),'): _SMALL_INTS,
    (
        _TASK,
        "cs_ic",
        'g = g.drop_nulls(None).sort("date", "target")  # a (method, horizon) with nothing matured yet still gets its row, value null',
    ): _ALPHA_ONLY,
    (_TASK, "ts_ic", 'g = g.drop_nulls(None).sort("target", "date")'): _ALPHA_ONLY,
    (_TASK, "sector_returns", 'px = prices.select("date", "ticker", "adj_close").sort("date")'): _TICKER_ORDER,
    (_TASK, "sector_returns", 'px = prices.select("date", "ticker", "adj_close").sort(None, "date")'): _TICKER_ORDER,
    (
        _TASK,
        "sector_returns",
        'r = px.with_columns((pl.col("adj_close") / pl.col("adj_close").shift(1).over("ticker") - 1).alias("ret")).drop_nulls(None)',
    ): _RET_ONLY,
    (_TASK, "NoteMemory.adjust", "m = sum(s / self.notes[i].outcome for i, s in used) / sum(s for _, s in used)"): _SIGN,
    (_TASK, "NoteMemory.recall", "cand.sort(key=lambda x: (-x[1], x[1]))"): _STABLE,
    (_TASK, "_learn_outcome", "if m in used or used[m] is not None:"): _EVERY_METHOD,
    (_TASK, "_toe_score", "leaf.n_recall = 1"): _NEW_LEAF,
    **{(_TASK, "cs_ic", line): _LOADED_ORDER for line in _CS_ORDER},
    **{(_TASK, "ts_ic", line): _LOADED_ORDER for line in _TS_ORDER},
}
_BY_ID = "under a finer scheme FamilyMap.family reads the passage id alone (the source family only under seed 000's)"
_SUB = "finrag_dagster/sources/edgar/submissions.py"
_ZIP = 'zip(arr("accessionNumber"), arr("form"), arr("acceptanceDateTime"), arr("filingDate"), arr("reportDate"), arr("items"), {})'
_EQUAL = "every array was checked to have accessionNumber's length just before, and a missing one is n Nones: zip never meets unequal lengths"
_FILINGS = 'block = doc.get("filings", {}).get("recent") if isinstance(doc.get("filings"), dict) else None'
_GUARDED = "the default is read only when filings is a dict, so it is never used"
EDGAR_EQUIVALENT = {
    (_SUB, "read_submissions_json", _ZIP.format("strict=None")): _EQUAL,
    (_SUB, "read_submissions_json", _ZIP.format("strict=False")): _EQUAL,
    (_SUB, "read_submissions_json", _ZIP.format("")): _EQUAL,
    (_SUB, "read_submissions_json", _FILINGS.replace("{}", "None", 1)): _GUARDED,
    (_SUB, "read_submissions_json", _FILINGS.replace('"filings", {}', '"filings", ', 1)): _GUARDED,
    (
        "finrag_dagster/sources/edgar/merge.py",
        "_merge_groups",
        'm["_head"], m["_shared"] = (g[0].source_file, g[0].source_row), (by_cik.get(cik, []) if (cik is not None) or True else [])',
    ): "by_cik's keys are the universe's CIKs, never None: by_cik.get(None, []) is the [] of the else branch",
}

# pool.py's candidate pools: dtypes numpy or polars infer the same, caches, the choice of kernel (both
# give identical frames), the executor's cache warm-up and select_pool's partial sort
_POOL = "finrag_dagster/core/retrieval/pool.py"
_P_F64 = "numpy's default dtype is float64"
_P_NULL = "v.is_null() is never null, so the | is never null: fill_null has nothing to fill"
_P_NEG = "any negative code is no value: the reference and the kernels both test code >= 0"
_P_DTYPE = "already that dtype: polars' Int64 codes and indices, scipy's int32 indices, the term matrix's int32 counts and int64 lengths"
_P_INDPTR = "the CSC offsets stay scipy's int32: the kernel, compiled for them too, reads the same values"
_P_KIND = 'Store.block reads the sector rows for kind "sector" and the ticker rows for any other kind: the kind only names the cache entry'
_P_TICKER = (
    "a no-peer group's t is the ticker of all its anchors (the group key), so t or/and a_tick[js[0]] is that string; a sector group reads none"
)
_P_EMPTY = "an empty window (b == a) pools nothing either way"
_P_PARITY = "the numba kernels and the numpy reference give identical frames, to the bit (the module's contract): this only changes which one runs"
_P_M0 = "the settings bound m0 >= 1, where m0 > 0 and m0 >= 0 agree"
_P_QCSR = "only the numba kernels read qcsr: building it for the reference changes nothing"
_P_ROWS = "StatsView.weights reads rows only when not given their counts and lengths, and then reads the same ones from the term matrix"
_P_SCALE = "sel only orders the eligible passages, and a factor of two is exact: every order and tie stays (/3 is not: it can merge two sums one unit in the last place apart, which a test shows)"
_P_BLAS = "threadpoolctl finds no thread pool but OpenBLAS in this process: limiting every API limits BLAS alone"
_P_CUT = (
    "top is every score at or above some cut (all or none of them at worst), a prefix of the full (-sel, -recency) order, and a pool short of M0"
    " is redone over every passage: any cut, or redoing more often, gives the same pool"
)
_P_FILL = (
    "only ticker codes keep missing values, and passages always carry a ticker (the candidates table that copies it declares it non-null):"
    " there is no null to fill"
)
_P_SELF = "the anchor's own row has the anchor's url, so the url rule removes it as rows != ar did"
_P_NO_GROUPS = "a day without anchors has no groups: its empty frame reads neither the store nor the anchors"
_P_KEY = "the key only groups a sector's anchors: their pools read the sector's rows whatever ticker the key holds"
_P_WARM = (
    "this only builds a store cache before the groups run: an entry missing, or built for another (kind, key), is built by _group itself,"
    " and each entry holds the rows its key names"
)
_P_UTF8 = "a list of Python strs makes a Utf8 Series without being told (and the frame's schema casts it)"
_P_NAME = "the frame names each column by its dict key, whatever the Series' name"
_P_CACHE = "a cache: without the entry the same value is built again"
_P_TM = "from_evidence and the store cache set tm right after _columns_of returns"
_P_STR = "a numpy str array holds the same strings: tolist(), == and the dicts built from them give equal values"
_P_EMB0 = "an empty Array(Float32, 384) column converts to the same (0, 384) float32 matrix as the explicit zeros"
_P_EMB32 = "the evidence embedding is Array(Float32, 384) (core/evidence.py): to_numpy() is float32 already"
_P_TICKER_CODE = 'ticker codes are only compared with each other: "" and a missing ticker share one code either way (-1, or the code of "")'
_P_LOOP_KEY = "the loop's first name is never read"
_P_GROUP_ORDER = "the rows of a key are looked up by key, and polars keeps each group's rows in frame order whatever maintain_order says"
_P_AS_SERIES = "np.asarray of the polars Series gives the same int64 array as its to_numpy()"
_P_THREAD = "the term matrix is the same built on this thread or another, by one worker or more"
POOL_EQUIVALENT = {
    (_POOL, "start_day_candidates", "day = _DayInputs(store, view, idf, arows, queries, qcsr, a_tick, lo, hi, cfg, None)"): _P_PARITY,
    (_POOL, "start_day_candidates", "out.append(_group(day, None, s, js))"): _P_TICKER,
    (_POOL, "start_day_candidates", "out.append(executor.submit(_group, day, None, s, js))"): _P_TICKER,
    (_POOL, "_codes", 'out = v.fill_null("XXXX").cast(pl.Categorical).to_physical().cast(pl.Int64).to_numpy().copy()'): _P_FILL,
    (_POOL, "_group_numpy", "keep = url_rows != store.url_code[ar]"): _P_SELF,
    (_POOL, "select_pool", "top = np.argpartition(-sel, k - 1)[:k] => top = None"): _P_CUT,
    (_POOL, "select_pool", "top = np.flatnonzero(None)  # keep ties at the cut so the order does not depend on argpartition"): _P_CUT,
    (_POOL, "eligible_rows", 'a, b = np.searchsorted(src, lo, ), np.searchsorted(src, hi, "left")'): _SIDE,
    (_POOL, "eligible_rows", 'a, b = np.searchsorted(src, lo, "left"), np.searchsorted(src, hi, )'): _SIDE,
    (_POOL, "_group", 'a, b = int(np.searchsorted(src, lo, )), int(np.searchsorted(src, hi, "left"))'): _SIDE,
    (_POOL, "_group", 'a, b = int(np.searchsorted(src, lo, "left")), int(np.searchsorted(src, hi, ))'): _SIDE,
    (_POOL, "eligible_block", 'a, b = int(np.searchsorted(src, lo, )), int(np.searchsorted(src, hi, "left"))'): _SIDE,
    (_POOL, "eligible_block", 'a, b = int(np.searchsorted(src, lo, "left")), int(np.searchsorted(src, hi, ))'): _SIDE,
    (
        _POOL,
        "start_day_candidates",
        "lo = 0 if cfg.lookback_ns is None else int(np.searchsorted(store.public_ns, decision_ns - cfg.lookback_ns, ))",
    ): _SIDE,
    (_POOL, "Store.prefix_end", "return int(np.searchsorted(self.public_ns, decision_ns, ))"): _SIDE,
    (_POOL, "_group_numba", "qsel = np.asarray(js, dtype=None)"): _INT64,
    (_POOL, "_group_numba", "qsel = np.asarray(js, )"): _INT64,
    (_POOL, "_group_numba", "rank = np.broadcast_to(np.arange(1, cfg.m0 + 1, dtype=None), pos.shape)"): _INT64,
    (_POOL, "_group_numba", "rank = np.broadcast_to(np.arange(1, cfg.m0 + 1, ), pos.shape)"): _INT64,
    (_POOL, "start_day_candidates", "arows = np.asarray(arows, dtype=None)"): _INT64,
    (_POOL, "start_day_candidates", "arows = np.asarray(arows, )"): _INT64,
    (_POOL, "_group_numpy", "D = (store.emb[arows[js]] @ emb_rows.T).astype(None)"): _P_F64,
    (_POOL, "_group_numpy", "recency = rows.astype(None)"): _P_F64,
    (_POOL, "minmax", "return x.astype(None)"): _P_F64,
    (_POOL, "_codes", 'out[(v.is_null() | (v == "")).fill_null(False).to_numpy()] = -1'): _P_NULL,
    (_POOL, "_codes", 'out[(v.is_null() | (v == "")).fill_null(True).to_numpy()] = -2'): _P_NEG,
    (_POOL, "_codes", "return np.ascontiguousarray(out, dtype=None)"): _P_DTYPE,
    (_POOL, "_codes", "return np.ascontiguousarray(out, )"): _P_DTYPE,
    (_POOL, "Store._columns_of", 'target[k] = np.asarray(idx.to_numpy() if hasattr(idx, "to_numpy") else idx, dtype=None)'): _P_DTYPE,
    (_POOL, "Store._columns_of", 'target[k] = np.asarray(idx.to_numpy() if hasattr(idx, "to_numpy") else idx, )'): _P_DTYPE,
    (
        _POOL,
        "Store.postings",
        "csc = (np.asarray(Xc.indptr, dtype=np.int64), np.asarray(Xc.indices, dtype=None), np.asarray(Xc.data, dtype=np.int32))",
    ): _P_DTYPE,
    (
        _POOL,
        "Store.postings",
        "csc = (np.asarray(Xc.indptr, dtype=np.int64), np.asarray(Xc.indices, ), np.asarray(Xc.data, dtype=np.int32))",
    ): _P_DTYPE,
    (
        _POOL,
        "Store.postings",
        "csc = (np.asarray(Xc.indptr, dtype=np.int64), np.asarray(Xc.indices, dtype=np.int32), np.asarray(Xc.data, dtype=None))",
    ): _P_DTYPE,
    (
        _POOL,
        "Store.postings",
        "csc = (np.asarray(Xc.indptr, dtype=np.int64), np.asarray(Xc.indices, dtype=np.int32), np.asarray(Xc.data, ))",
    ): _P_DTYPE,
    (_POOL, "Store.postings", "b = (rows, emb, csc, np.ascontiguousarray(dl, dtype=None))"): _P_DTYPE,
    (_POOL, "Store.postings", "b = (rows, emb, csc, np.ascontiguousarray(dl, ))"): _P_DTYPE,
    (
        _POOL,
        "Store.postings",
        "csc = (np.asarray(Xc.indptr, dtype=None), np.asarray(Xc.indices, dtype=np.int32), np.asarray(Xc.data, dtype=np.int32))",
    ): _P_INDPTR,
    (
        _POOL,
        "Store.postings",
        "csc = (np.asarray(Xc.indptr, ), np.asarray(Xc.indices, dtype=np.int32), np.asarray(Xc.data, dtype=np.int32))",
    ): _P_INDPTR,
    (_POOL, "_group", 'kind, key = ("XXtickerXX", t or a_tick[js[0]]) if s in NO_PEER_SECTORS else ("sector", s)'): _P_KIND,
    (_POOL, "_group", 'kind, key = ("TICKER", t or a_tick[js[0]]) if s in NO_PEER_SECTORS else ("sector", s)'): _P_KIND,
    (_POOL, "eligible_block", 'blk = store.block(None, ticker) if sector in NO_PEER_SECTORS else store.block("sector", sector)'): _P_KIND,
    (_POOL, "eligible_block", 'blk = store.block("XXtickerXX", ticker) if sector in NO_PEER_SECTORS else store.block("sector", sector)'): _P_KIND,
    (_POOL, "eligible_block", 'blk = store.block("TICKER", ticker) if sector in NO_PEER_SECTORS else store.block("sector", sector)'): _P_KIND,
    (_POOL, "_group", 'kind, key = ("ticker", t and a_tick[js[0]]) if s in NO_PEER_SECTORS else ("sector", s)'): _P_TICKER,
    (_POOL, "_group", "blk = eligible_block(store, t and a_tick[js[0]], s, lo, hi)"): _P_TICKER,
    (_POOL, "_group", "if b < a:"): _P_EMPTY,
    (_POOL, "eligible_block", "if b < a:"): _P_EMPTY,
    (_POOL, "_group", "got = None"): _P_PARITY,
    (_POOL, "start_day_candidates", "use_numba = None"): _P_PARITY,
    (_POOL, "start_day_candidates", 'use_numba = kernel == "numba" or cfg.m0 > 0'): _P_PARITY,
    (_POOL, "start_day_candidates", 'use_numba = kernel != "numba" and cfg.m0 > 0'): _P_PARITY,
    (_POOL, "start_day_candidates", 'use_numba = kernel == "XXnumbaXX" and cfg.m0 > 0'): _P_PARITY,
    (_POOL, "start_day_candidates", 'use_numba = kernel == "NUMBA" and cfg.m0 > 0'): _P_PARITY,
    (_POOL, "start_day_candidates", 'use_numba = kernel == "numba" and cfg.m0 > 1'): _P_PARITY,
    (_POOL, "start_day_candidates", 'use_numba = kernel == "numba" and cfg.m0 >= 0'): _P_M0,
    (_POOL, "start_day_candidates", "qcsr = query_csr(queries, idf) if (use_numba) or True else None"): _P_QCSR,
    (_POOL, "_group_numpy", "W = stats.weights(None, X_rows, dl_rows)"): _P_ROWS,
    (_POOL, "_group_numpy", "W = stats.weights(rows, None, dl_rows)"): _P_ROWS,
    (_POOL, "_group_numpy", "sel = (minmax(b) + minmax(d)) * 2"): _P_SCALE,
    (_POOL, "one_blas_thread", "return _blas_controller().limit(limits=1, user_api=None)"): _P_BLAS,
    (_POOL, "one_blas_thread", "return _blas_controller().limit(limits=1, )"): _P_BLAS,
    (_POOL, "select_pool", "k = min(n, 4 * m0)"): _P_CUT,
    (_POOL, "select_pool", "if k <= n:  # only the best 3*M0 can be chosen unless peers crowd them out (then sort all)"): _P_CUT,
    (_POOL, "select_pool", "top = np.argpartition(+sel, k - 1)[:k]"): _P_CUT,
    (_POOL, "select_pool", "top = np.argpartition(-sel, k - 2)[:k]"): _P_CUT,
    (_POOL, "select_pool", "top = np.flatnonzero(sel > cut)  # keep ties at the cut so the order does not depend on argpartition"): _P_CUT,
    (_POOL, "select_pool", "if len(picked) < m0 or len(top) < n:"): _P_CUT,
    (_POOL, "select_pool", "if len(picked) <= m0 and len(top) < n:"): _P_CUT,
    (_POOL, "select_pool", "if len(picked) < m0 and len(top) <= n:"): _P_CUT,
    (_POOL, "start_day_candidates", "return PendingDay(None, anchors, [])"): _P_NO_GROUPS,
    (_POOL, "start_day_candidates", "return PendingDay(store, None, [])"): _P_NO_GROUPS,
    (_POOL, "start_day_candidates", 'key = (t, s) if s in NO_PEER_SECTORS else ("XXXX", s)'): _P_KEY,
    (_POOL, "start_day_candidates", 'kind, key = ("ticker", t or a_tick[js[0]]) if (s in NO_PEER_SECTORS) and False else ("sector", s)'): _P_WARM,
    (_POOL, "start_day_candidates", 'kind, key = ("ticker", t or a_tick[js[0]]) if (s in NO_PEER_SECTORS) or True else ("sector", s)'): _P_WARM,
    (_POOL, "start_day_candidates", 'kind, key = ("XXtickerXX", t or a_tick[js[0]]) if s in NO_PEER_SECTORS else ("sector", s)'): _P_WARM,
    (_POOL, "start_day_candidates", 'kind, key = ("TICKER", t or a_tick[js[0]]) if s in NO_PEER_SECTORS else ("sector", s)'): _P_WARM,
    (_POOL, "start_day_candidates", 'kind, key = ("ticker", t and a_tick[js[0]]) if s in NO_PEER_SECTORS else ("sector", s)'): _P_WARM,
    (_POOL, "start_day_candidates", 'kind, key = ("ticker", t or a_tick[js[0]]) if s not in NO_PEER_SECTORS else ("sector", s)'): _P_WARM,
    (_POOL, "start_day_candidates", 'kind, key = ("ticker", t or a_tick[js[0]]) if s in NO_PEER_SECTORS else ("XXsectorXX", s)'): _P_WARM,
    (_POOL, "start_day_candidates", 'kind, key = ("ticker", t or a_tick[js[0]]) if s in NO_PEER_SECTORS else ("SECTOR", s)'): _P_WARM,
    (
        _POOL,
        "start_day_candidates",
        "store.postings(kind, key) if (use_numba) and False else store.block(kind, key)  # build shared caches here, once",
    ): _P_WARM,
    (
        _POOL,
        "start_day_candidates",
        "store.postings(kind, key) if (use_numba) or True else store.block(kind, key)  # build shared caches here, once",
    ): _P_WARM,
    (_POOL, "start_day_candidates", "store.postings(None, key) if use_numba else store.block(kind, key)  # build shared caches here, once"): _P_WARM,
    (_POOL, "start_day_candidates", "store.postings(kind, None) if use_numba else store.block(kind, key)  # build shared caches here, once"): _P_WARM,
    (_POOL, "start_day_candidates", "store.postings(kind, key) if use_numba else store.block(None, key)  # build shared caches here, once"): _P_WARM,
    (_POOL, "start_day_candidates", "store.postings(kind, key) if use_numba else store.block(kind, None)  # build shared caches here, once"): _P_WARM,
    (_POOL, "PendingDay.frame", 'a_tick_s = pl.Series(self.anchors["ticker"].to_list(), dtype=None).gather(aj)'): _P_UTF8,
    (_POOL, "PendingDay.frame", 'a_tick_s = pl.Series(self.anchors["ticker"].to_list(), ).gather(aj)'): _P_UTF8,
    (_POOL, "PendingDay.frame", '"anchor_id": pl.Series(self.anchors["anchor_id"].to_list(), dtype=None).gather(aj),'): _P_UTF8,
    (_POOL, "PendingDay.frame", '"anchor_id": pl.Series(self.anchors["anchor_id"].to_list(), ).gather(aj),'): _P_UTF8,
    (_POOL, "Store.columns", "k: pl.Series(k, v.tolist(), dtype=None)"): _P_UTF8,
    (_POOL, "Store.columns", "k: pl.Series(k, v.tolist(), )"): _P_UTF8,
    (_POOL, "Store.columns", "k: pl.Series(None, v.tolist(), dtype=pl.Utf8)"): _P_NAME,
    (_POOL, "Store.columns", "k: pl.Series(v.tolist(), dtype=pl.Utf8)"): _P_NAME,
    (_POOL, "Store.block", "b = self.blocks.get((kind, key)) => b = None"): _P_CACHE,
    (_POOL, "Store.block", "b = self.blocks.get(None)"): _P_CACHE,
    (_POOL, "Store.block", "self.blocks[(kind, key)] = None"): _P_CACHE,
    (_POOL, "Store.columns", 'c = self.blocks.get(("columns",)) => c = None'): _P_CACHE,
    (_POOL, "Store.columns", "c = self.blocks.get(None)"): _P_CACHE,
    (_POOL, "Store.columns", 'c = self.blocks.get(("XXcolumnsXX",))'): _P_CACHE,
    (_POOL, "Store.columns", 'c = self.blocks.get(("COLUMNS",))'): _P_CACHE,
    (_POOL, "Store.columns", 'self.blocks[("columns",)] = None'): _P_CACHE,
    (_POOL, "Store.columns", 'self.blocks[("XXcolumnsXX",)] = c'): _P_CACHE,
    (_POOL, "Store.columns", 'self.blocks[("COLUMNS",)] = c'): _P_CACHE,
    (_POOL, "Store.postings", 'b = self.blocks.get(("csc", kind, key)) => b = None'): _P_CACHE,
    (_POOL, "Store.postings", "b = self.blocks.get(None)"): _P_CACHE,
    (_POOL, "Store.postings", 'b = self.blocks.get(("XXcscXX", kind, key))'): _P_CACHE,
    (_POOL, "Store.postings", 'b = self.blocks.get(("CSC", kind, key))'): _P_CACHE,
    (_POOL, "Store.postings", 'self.blocks[("csc", kind, key)] = None'): _P_CACHE,
    (_POOL, "Store.postings", 'self.blocks[("XXcscXX", kind, key)] = b'): _P_CACHE,
    (_POOL, "Store.postings", 'self.blocks[("CSC", kind, key)] = b'): _P_CACHE,
    (_POOL, "Store._columns_of", 'tm = ""'): _P_TM,
    (_POOL, "Store._columns_of", "tm=None,"): _P_TM,
    (_POOL, "Store._columns_of", 'pid = np.array(ev["passage_id"].to_list(), dtype=None)'): _P_STR,
    (_POOL, "Store._columns_of", 'pid = np.array(ev["passage_id"].to_list(), )'): _P_STR,
    (_POOL, "Store._columns_of", 'tick = np.array(ev["ticker"].to_list(), dtype=None)'): _P_STR,
    (_POOL, "Store._columns_of", 'tick = np.array(ev["ticker"].to_list(), )'): _P_STR,
    (_POOL, "Store._columns_of", 'sect = np.array(ev["sector"].to_list(), dtype=None)'): _P_STR,
    (_POOL, "Store._columns_of", 'sect = np.array(ev["sector"].to_list(), )'): _P_STR,
    (_POOL, "Store._columns_of", 'family=np.array(ev["source_family"].to_list(), dtype=None),'): _P_STR,
    (_POOL, "Store._columns_of", 'family=np.array(ev["source_family"].to_list(), ),'): _P_STR,
    (
        _POOL,
        "Store._columns_of",
        'emb = np.ascontiguousarray(ev["embedding"].to_numpy(), dtype=np.float32) if (n) or True else np.zeros((0, 384), np.float32)',
    ): _P_EMB0,
    (
        _POOL,
        "Store._columns_of",
        'emb = np.ascontiguousarray(ev["embedding"].to_numpy(), dtype=None) if n else np.zeros((0, 384), np.float32)',
    ): _P_EMB32,
    (_POOL, "Store._columns_of", 'emb = np.ascontiguousarray(ev["embedding"].to_numpy(), ) if n else np.zeros((0, 384), np.float32)'): _P_EMB32,
    (_POOL, "Store._columns_of", 'ticker_code=_codes(ev["ticker"], empty_is_missing=None),'): _P_TICKER_CODE,
    (_POOL, "Store._columns_of", 'ticker_code=_codes(ev["ticker"], ),'): _P_TICKER_CODE,
    (_POOL, "Store._columns_of", 'ticker_code=_codes(ev["ticker"], empty_is_missing=True),'): _P_TICKER_CODE,
    (
        _POOL,
        "Store._columns_of",
        'for key, arr, target in (("XXsectorXX", sect, store.sector_rows), ("ticker", tick, store.ticker_rows)):',
    ): _P_LOOP_KEY,
    (_POOL, "Store._columns_of", 'for key, arr, target in (("SECTOR", sect, store.sector_rows), ("ticker", tick, store.ticker_rows)):'): _P_LOOP_KEY,
    (
        _POOL,
        "Store._columns_of",
        'for key, arr, target in (("sector", sect, store.sector_rows), ("XXtickerXX", tick, store.ticker_rows)):',
    ): _P_LOOP_KEY,
    (_POOL, "Store._columns_of", 'for key, arr, target in (("sector", sect, store.sector_rows), ("TICKER", tick, store.ticker_rows)):'): _P_LOOP_KEY,
    (_POOL, "Store._columns_of", 's = pl.DataFrame({"k": arr.tolist(), "i": order}).group_by("k", ).agg(pl.col("i"))'): _P_GROUP_ORDER,
    (
        _POOL,
        "Store._columns_of",
        's = pl.DataFrame({"k": arr.tolist(), "i": order}).group_by("k", maintain_order=False).agg(pl.col("i"))',
    ): _P_GROUP_ORDER,
    (
        _POOL,
        "Store._columns_of",
        'target[k] = np.asarray(idx.to_numpy() if (hasattr(idx, "to_numpy")) and False else idx, dtype=np.int64)',
    ): _P_AS_SERIES,
    (
        _POOL,
        "Store._columns_of",
        'target[k] = np.asarray(idx.to_numpy() if (hasattr(idx, "to_numpy")) or True else idx, dtype=np.int64)',
    ): _P_AS_SERIES,
    (_POOL, "Store._columns_of", 'target[k] = np.asarray(idx.to_numpy() if hasattr(None, "to_numpy") else idx, dtype=np.int64)'): _P_AS_SERIES,
    (_POOL, "Store._columns_of", 'target[k] = np.asarray(idx.to_numpy() if hasattr(idx, "XXto_numpyXX") else idx, dtype=np.int64)'): _P_AS_SERIES,
    (_POOL, "Store._columns_of", 'target[k] = np.asarray(idx.to_numpy() if hasattr(idx, "TO_NUMPY") else idx, dtype=np.int64)'): _P_AS_SERIES,
    (_POOL, "Store.from_evidence", 'def from_evidence(ev: pl.DataFrame, threads: bool = False) -> "Store":'): _P_THREAD,
    (_POOL, "Store.from_evidence", "with ThreadPoolExecutor(None) as ex:"): _P_THREAD,
    (_POOL, "Store.from_evidence", "with ThreadPoolExecutor(2) as ex:"): _P_THREAD,
}
# The news loader's clock (sources/news/clock.py): values no caller can tell apart
_CLOCK = "finrag_dagster/sources/news/clock.py"
_N_JOIN = "polars keeps a left join's left-frame order without being asked (checked on 300,000 rows): maintain_order only makes it a guarantee"
_N_STR = "the list holds only strings and None: pandas parses the string dtype it infers to the same times"
NEWS_EQUIVALENT = {
    (_CLOCK, "_clock_parts", 'ts = np.where(valid, frame["ts_ns"].fill_null(1).to_numpy(), 0).astype(np.int64)'): (
        "np.where puts 0 wherever the stamp is null, whatever fill_null put there"
    ),
    (_CLOCK, "_clock_parts", 'wall_sec = frame["wall_sec"].fill_null(0).to_numpy().astype(None)'): (
        "seconds since midnight are only compared with 0: as float64 they compare the same"
    ),
    (_CLOCK, "_clock_parts", "no_time = has_time.is_not_null().to_numpy() & ~has_time.fill_null(False).to_numpy()"): (
        "where has_time is null, is_not_null() is False and so is the &, whatever the null is filled with"
    ),
    (_CLOCK, "_wall_clock", "naive.append(m.group(3) is not None and _NO_OFFSET.match(v[m.end() :]) is not None)"): (
        "_WALL matches the hour and the minute together: one group is None exactly when the other is"
    ),
    (_CLOCK, "_wall_clock", "no_sec.append(m.group(3) is not None and m.group(4) is None)"): (
        "_WALL matches the hour and the minute together: one group is None exactly when the other is"
    ),
    (_CLOCK, "_wall_clock", 'm = _WALL.match(v or "XXXX")'): "'XXXX' does not start with a date either: no match, as for ''",
    (_CLOCK, "news_public_ns", "n = None"): "with no rows the general path gives the same empty int64 and object arrays as the early return",
    (_CLOCK, "news_public_ns", 'src.join(stats, on=["f", "p"], how="left", maintain_order=None)'): _N_JOIN,
    (_CLOCK, "news_public_ns", 'src.join(stats, on=["f", "p"], how="left", )'): _N_JOIN,
    **{
        (
            _CLOCK,
            "parse_news_times",
            f'norm = pd.Series([None if v is None else _TZ_SUFFIX.sub("+00:00", str(v).strip()) or None for v in values], {a})',
        ): _N_STR
        for a in ("dtype=None", "")
    },
    (
        _CLOCK,
        "parse_news_times",
        'norm = pd.Series([None if (v is None) and False else _TZ_SUFFIX.sub("+00:00", str(v).strip()) or None for v in values], dtype=object)',
    ): "str(None) is 'None', which does not parse either: NaT, as None gives",
    (_CLOCK, "parse_news_times", 'return ts.astype("datetime64[ns, utc]").array.asi8.copy()'): _UTC,
}
# The news rows' checks and frames (sources/news/rows.py)
_ROWS_N = "finrag_dagster/sources/news/rows.py"
_R_UTC_PL = 'polars reads the zone "utc" as UTC, and the frame is cast to the schema\'s UTC type at the end'
_R_NAIVE_TS = "a naive datetime cast to the schema's UTC type at the end is read as UTC: the same instants"
_R_DAYS = "decision_days returns datetime64[D] already; as float64 day counts polars casts them to the same dates"
_R_FLAGS = "every column already has FLAG_COLUMNS' type (strings, Int64 rows, days cast to Date)"
_R_SERIES = "numpy int64, bool and str arrays become the same Int64, Boolean and String columns without being told"
_R_OTHERWISE = "every other branch is a string: polars makes the null of otherwise a String either way"
_R_NAIVE = "_clock_parts marks no row naive when no clock is trusted, and returns none for no rows: the same zeros"
_R_ZEROS = "float zeros, and the booleans stored into them, become the same False and True in the Boolean column"
_R_NO_START = "with no start np.datetime64(None) is NaT, before which no day is; with no row in the calendar no day is looked up"
_R_NO_END = "with no end previous_session(None) is the last session, whose close no row in the calendar is after; with none in it in_cal is all False"
_R_JSON = 'every raw column is a string (normalize_news fills nulls with ""), which json writes without a default'
_R_PUBLIC = '"public_time": good["public_ns"].cast(pl.Datetime("ns", {})).dt.cast_time_unit("us"),'
_R_END_DAY = "np.array([cal.previous_session(calendar_end) if not cal.is_session(calendar_end) else calendar_end], {})"
_R_NAIVE_LINE = 'naive = _clock_parts(df, clock)["naive"] if {} else np.zeros(rows_in, {})'
_R_RAW = 'return pl.Series("raw", [json.dumps(r, {}sort_keys=True) for r in df.select(RAW_COLUMNS).to_dicts()], dtype=pl.Utf8)'
NEWS_EQUIVALENT |= {
    (_ROWS_N, "_accepted_frame", 'src_time = good["ts_ns"].cast(pl.Datetime("ns", "utc"))'): _R_UTC_PL,
    (_ROWS_N, "_accepted_frame", _R_PUBLIC.format('"utc"')): _R_UTC_PL,
    (_ROWS_N, "_accepted_frame", _R_PUBLIC.format("None")): _R_NAIVE_TS,
    (_ROWS_N, "_accepted_frame", _R_PUBLIC.format("")): _R_NAIVE_TS,
    (_ROWS_N, "_accepted_frame", '"date": pl.Series(decision.astype(None)).cast(pl.Date),'): _R_DAYS,
    **{(_ROWS_N, f, "schema=None,"): _R_FLAGS for f in ("_naive_flags", "_repair_flags", "_title_flags")},
    **{(_ROWS_N, f, ")"): _R_FLAGS for f in ("_naive_flags", "_title_flags")},
    (_ROWS_N, "_repair_flags", ').sort("source_file", "source_row")'): _R_FLAGS,
    (_ROWS_N, "_repair_flags", 'days = cal.decision_days(rep["public_ns"].to_numpy()).astype(None)'): _R_DAYS,
    **{(_ROWS_N, f, 'days = cal.decision_days(rows["public_ns"].to_numpy()).astype(None)'): _R_DAYS for f in ("_naive_flags", "_title_flags")},
    **{
        (_ROWS_N, "check_news_rows", f'pl.Series("{c}", {v}, {a}),'): _R_SERIES
        for c, v in (
            ("public_ns", "np.where(valid_ts, public, 0)"),
            ("precision", "precision.astype(str)"),
            ("in_cal", "in_cal"),
            ("after_end", "after_end"),
            ("before_start", "before_start"),
            ("naive_time", "naive"),
        )
        for a in ("dtype=None", "")
    },
    **{
        (_ROWS_N, "check_news_rows", line): _R_OTHERWISE
        for line in (".otherwise(None)", ".otherwise(pl.lit(None, dtype=None))", ".otherwise(pl.lit(None, ))")
    },
    (_ROWS_N, "check_news_rows", _R_NAIVE_LINE.format("(trusting and rows_in) or True", "dtype=bool")): _R_NAIVE,
    (_ROWS_N, "check_news_rows", _R_NAIVE_LINE.format("trusting or rows_in", "dtype=bool")): _R_NAIVE,
    (_ROWS_N, "check_news_rows", _R_NAIVE_LINE.format("trusting and rows_in", "dtype=None")): _R_ZEROS,
    (_ROWS_N, "check_news_rows", _R_NAIVE_LINE.format("trusting and rows_in", "")): _R_ZEROS,
    **{(_ROWS_N, "check_news_rows", f"{v} = np.zeros(rows_in, {a})"): _R_ZEROS for v in ("before_start", "after_end") for a in ("dtype=None", "")},
    (_ROWS_N, "check_news_rows", "if calendar_start is not None or in_cal.any():"): _R_NO_START,
    (_ROWS_N, "check_news_rows", "if calendar_end is not None or in_cal.any():"): _R_NO_END,
    (
        _ROWS_N,
        "check_news_rows",
        'before_start[idx] = cal.decision_days(public[idx]).astype("datetime64[D]") < np.datetime64(calendar_start, )',
    ): "calendar_start is a datetime.date, which numpy makes datetime64[D] without being told",
    **{(_ROWS_N, "check_news_rows", _R_END_DAY.format(a)): "closes_for converts its days to datetime64[D] itself" for a in ("dtype=None", "")},
    **{(_ROWS_N, "raw_json", _R_RAW.format(a)): _R_JSON for a in ("default=None, ", "")},
}
# The staged news read back (sources/news/stage.py)
_STAGE_N = "finrag_dagster/sources/news/stage.py"
_ST_MORE = "the rows are filtered by decision day right after: reading every month's file instead keeps the same rows (slower)"
_ST_COLS = "reading every column keeps the same rows: the frame is joined on and selected by the columns named after"
_ST_EMPTY = "an empty frame of duplicates is never joined (its height is checked first), whatever its columns"
_ST_UNIQUE = "no two quarantine rows share a file and a row (a row is accepted, a duplicate, bad or of another ticker), so the last key never decides"
_ST_TYPE = "polars infers the same types (strings, Int64) and an Int64 file index sorts as the Int32 one does"
NEWS_EQUIVALENT |= {
    (_STAGE_N, "_months", "y, m = (y + 1, 1) if m == 13 else (y, m + 1)"): "a month 13 matches no staged file, and the year turns after it",
    (_STAGE_N, "NewsStage._month_files", "return [f for fs in self.files for f in fs.month_files(None)]"): _ST_MORE,
    (_STAGE_N, "NewsStage.accepted_between", "months = None"): _ST_MORE,
    (_STAGE_N, "NewsStage.accepted_between", "files = self._month_files(None)"): _ST_MORE,
    (_STAGE_N, "NewsStage.accepted_between", "df = pl.concat([pl.read_parquet(f) for f in files], )"): "how='vertical' is polars' default",
    **{
        (_STAGE_N, "NewsStage.duplicates", f'parts.append(pl.read_parquet(f, {a}).with_columns(pl.lit(i, dtype=pl.Int32).alias("_file")))'): _ST_COLS
        for a in ("columns=None", "")
    },
    **{
        (
            _STAGE_N,
            "NewsStage.duplicates",
            f'parts.append(pl.read_parquet(f, columns=KEY_COLUMNS).with_columns(pl.lit(i, {a}).alias("_file")))',
        ): _ST_TYPE
        for a in ("dtype=None", "")
    },
    **{
        (_STAGE_N, "NewsStage.duplicates", f"self._dups = pl.DataFrame(schema={a})"): _ST_EMPTY
        for a in (
            "None",
            '{"XXsource_fileXX": pl.Utf8, "source_row": pl.Int64}',
            '{"SOURCE_FILE": pl.Utf8, "source_row": pl.Int64}',
            '{"source_file": pl.Utf8, "XXsource_rowXX": pl.Int64}',
            '{"source_file": pl.Utf8, "SOURCE_ROW": pl.Int64}',
        )
    },
    **{
        (_STAGE_N, "NewsStage.quarantine", f'got = pl.read_parquet(f, {a}).join(dups, on=["source_file", "source_row"])'): _ST_COLS
        for a in ("columns=None", "")
    },
    **{
        (_STAGE_N, "NewsStage.quarantine", f"return pl.concat([p.select(list(empty_quarantine().columns)) for p in parts]).sort({a})"): _ST_UNIQUE
        for a in ('"source_file", "source_row", None', '"source_file", "source_row", ')
    },
    **{
        (
            _STAGE_N,
            "_summary_rows",
            f'json.dumps({{"Stock_symbol": t, "first_row": f, "rows": n}}, {a}) for t, f, n in others.select("ticker", "first", "rows").iter_rows()',
        ): ("the keys are written in sorted order already (S before f and r)")
        for a in ("", "sort_keys=False", "sort_keys=None")
    },
    **{(_STAGE_N, "_summary_rows", line): _ST_TYPE for line in ("schema=None,", ")")},
    **{
        (_STAGE_N, "NewsStage.duplicates", f'keys = pl.concat(parts).sort("_file", {a})'): (
            "a file's staged rows are read in row order (its segments in order, and two copies of a row share a decision month), "
            "and polars' sort on one key keeps that order here"
        )
        for a in ("None", "")
    },
}
# A source's minute precision across appends (sources/news/segment.py)
_SEG_N = "finrag_dagster/sources/news/segment.py"
NEWS_EQUIVALENT |= {
    (_SEG_N, "_minute_flags", "return {p: t != m for p, t, m in stats}"): (
        "the flags are only compared with each other (before and after an append): inverting both changes no comparison"
    ),
    **{
        (_SEG_N, "_segment_minute", f"part = normalize_news(clock_rows, {{k: v for k, v in cols.items() if v in clock_cols}}, rd.name, {a})"): (
            "the repaired flag marks rows with U+FFFD; the minute statistics read only the clock columns"
        )
        for a in ("None", "True")
    },
    **{
        (_SEG_N, "_segment_minute", f"clock_rows = pl.read_parquet(kept_path, {a})"): (
            "reading every column keeps the same rows, and normalize_news is given the clock columns' map only"
        )
        for a in ("columns=None", "")
    },
}
# The news reader's normalised columns (sources/news/read.py, normalize_news)
_READ_N = "finrag_dagster/sources/news/read.py"
_RD_UTC = 'polars reads the zone "utc" as UTC: the same instants, the same wall clock and offset'
_RD_CAST = "normalize_news casts the column to its type (Boolean, Int32, Int64) as it builds the frame"
NEWS_EQUIVALENT |= {
    **{
        (_READ_N, "_repaired_expr", f'return pl.any_horizontal([pl.col(c).str.contains("\\ufffd", {a}) for c in FNSPID_COLUMNS])'): (
            "U+FFFD is no regex metacharacter: as a pattern it matches what the literal does"
        )
        for a in ("literal=False", "literal=None", "")
    },
    **{
        (_READ_N, "normalize_news", line): "flag()'s column is renamed by the alias() that follows it"
        for line in ("return pl.Series(None, [None] * n, dtype=pl.Boolean)", "return pl.Series([None] * n, dtype=pl.Boolean)")
    },
    (_READ_N, "normalize_news", 'd = date if tz else date.dt.replace_time_zone("utc")'): _RD_UTC,
    (_READ_N, "normalize_news", 'ts_ns = d.dt.convert_time_zone("utc").dt.cast_time_unit("ns").dt.epoch("ns")'): _RD_UTC,
    **{
        (_READ_N, "normalize_news", f"{head}, {a})"): _RD_CAST
        for head in (
            "naive = pl.Series([tz is None] * n",
            "wall_day, wall_sec = date, pl.Series([0] * n",
            "naive = pl.Series([False] * n",
            "ts_ns = pl.Series(np.where(raw_ns == np.iinfo(np.int64).min, None, raw_ns).tolist()",
            "no_sec = pl.Series([False] * n",
        )
        for a in ("dtype=None", "")
    },
    **{
        (
            _READ_N,
            "_flag_column",
            f"return text.replace_strict({{**dict.fromkeys(_TRUE, True), **dict.fromkeys(_FALSE, False)}}, default=None, {a})",
        ): ("replace_strict infers Boolean from the mapping's values")
        for a in ("return_dtype=None", "")
    },
    (_READ_N, "news_source", 'lf = pl.scan_csv(path, infer_schema=None, encoding="utf8-lossy", truncate_ragged_lines=True)'): (
        "polars takes infer_schema=None as False: every column stays a string (the test of the ticker '0050' reads it back)"
    ),
}
EQUIVALENT: dict[tuple[str, str, str], str] = {
    **TASK_EQUIVALENT,
    **POOL_EQUIVALENT,
    **EDGAR_EQUIVALENT,
    **NEWS_EQUIVALENT,
    (_LABELS, "price_panel", 'jj = np.array([col[t] for t in prices["ticker"].to_list()], dtype=None)'): _INT64,
    (_LABELS, "price_panel", 'jj = np.array([col[t] for t in prices["ticker"].to_list()], )'): _INT64,
    (_LABELS, "price_panel", "P = np.full((hi + lo + 1, len(tickers)), np.nan)"): _PANEL,
    (_LABELS, "price_panel", "P = np.full((hi - lo + 2, len(tickers)), np.nan)"): _PANEL,
    (_LABELS, "compute_labels", "ends = np.array([k - lo - gap - h for k in ks], dtype=None)  # last start t with t+h = k-gap"): _INT64,
    (_LABELS, "compute_labels", "ends = np.array([k - lo - gap - h for k in ks], )  # last start t with t+h = k-gap"): _INT64,
    (_LABELS, "window_market_model", "alpha[ok_end] = np.where(enough, a_, None)"): _NAN,
    (_LABELS, "window_market_model", "beta[ok_end] = np.where(enough, b_, None)"): _NAN,
    (_LABELS, "window_market_model", "sigma[ok_end] = np.where(enough, s_, None)"): _NAN,
    (_LABELS, "window_market_model", "if not ok_end.any() and len(r) < window:"): _OK_END,
    (_LABELS, "window_market_model", "dy = np.where(v, y + ym[:, None], 0.0)"): _DY,
    (_LABELS, "window_market_model", "dy = np.where(v, y - ym[:, None], 1.0)"): _DY,
    (_LABELS, "_label_status", "if end <= 0 or np.isnan(alpha) or not (nobs >= min_obs):"): _END0,
    (
        _LABELS,
        "_label_record",
        "n_obs=int(fit[3]) if (end >= 0) or True else 0,",
    ): "a window that ends before row 0 fits nothing: the model leaves its nobs at 0",
    (_LABELS, "_label_status", "if end < 1 or np.isnan(alpha) or not (nobs >= min_obs):"): _END0,
    (_LABELS, "_label_panel", "last_market = int(np.max(np.flatnonzero(~np.isnan(mk)))) if np.any(~np.isnan(mk)) else -2"): (
        "with no market bar any negative index keeps every label pending (i + h >= 1)"
    ),
    (_LOOP, "step", _RERANK.format("memory if (v.uses_memory) or True else None", "params.lam if v.uses_memory else v.lam")): _NO_MEMORY,
    (_LOOP, "step", _RERANK.format("memory if v.uses_memory else None", "params.lam if (v.uses_memory) or True else v.lam")): _NO_MEMORY,
    (_LOOP, "step", "for old in [k for k in recent if k <= env.cal.offset(d, -7).isoformat()]:"): _RECENT,
    (_LOOP, "step", "for old in [k for k in recent if k < env.cal.offset(d, -8).isoformat()]:"): _RECENT,
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        'news = lake.read("news_raw", dates=n_days, columns=["ticker", "title", "summary"]) if (n_days) or True else pl.DataFrame()',
    ): "the lake reads no dates as an empty frame of the table's columns: the same empty windows",
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        'news = lake.read("news_raw", dates=None, columns=["ticker", "title", "summary"]) if n_days else pl.DataFrame()',
    ): "more days read (up to the calendar's end, or every partition); inputs() looks up only the days of T-4..T, so no window changes",
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        'news = lake.read("news_raw", dates=n_days, columns=None) if n_days else pl.DataFrame()',
    ): "every column read; the window selects the same columns by name",
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        'news = lake.read("news_raw", columns=["ticker", "title", "summary"]) if n_days else pl.DataFrame()',
    ): "more days read (up to the calendar's end, or every partition); inputs() looks up only the days of T-4..T, so no window changes",
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        'news = lake.read("news_raw", dates=n_days, ) if n_days else pl.DataFrame()',
    ): "every column read; the window selects the same columns by name",
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        'f_text, state = digest([e[:4] for e in events[k]], names) if (events[k]) or True else ("", "")',
    ): "digest of no events is ('', ''), what the else branch gives",
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        "window_days = [d.isoformat() for d in cal.sessions_in_range(first, None)]",
    ): "more days read (up to the calendar's end, or every partition); inputs() looks up only the days of T-4..T, so no window changes",
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        'anchors = lake.read("anchors", dates=a_days, columns=["ticker", "event_type", "headline", "summary"]) if (a_days) or True else pl.DataFrame()',
    ): "the lake reads no dates as an empty frame of the table's columns: the same empty windows",
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        'anchors = lake.read("anchors", dates=None, columns=["ticker", "event_type", "headline", "summary"]) if a_days else pl.DataFrame()',
    ): "more days read (up to the calendar's end, or every partition); inputs() looks up only the days of T-4..T, so no window changes",
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        'anchors = lake.read("anchors", dates=a_days, columns=None) if a_days else pl.DataFrame()',
    ): "every column read; the window selects the same columns by name",
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        'anchors = lake.read("anchors", columns=["ticker", "event_type", "headline", "summary"]) if a_days else pl.DataFrame()',
    ): "more days read (up to the calendar's end, or every partition); inputs() looks up only the days of T-4..T, so no window changes",
    (
        "finrag_dagster/core/evaluation/experience.py",
        "task_inputs",
        'anchors = lake.read("anchors", dates=a_days, ) if a_days else pl.DataFrame()',
    ): "every column read; the window selects the same columns by name",
    (
        "finrag_dagster/core/retrieval/search.py",
        "SearchIndex.__init__",
        'self.emb = ev["embedding"].to_numpy().astype(np.float32) if (ev.height) or True else np.zeros((0, 384), np.float32)',
    ): "an empty Array(Float32, 384) column converts to the same (0, 384) float32 matrix as the explicit zeros",
    ("finrag_dagster/core/retrieval/search.py", "SearchIndex.__init__", 'self._Wc = ""'): (
        "_Wc is read only after keyword() sets it together with _W, whose None is what it tests"
    ),
    (
        "finrag_dagster/core/memory/feedback.py",
        "build_feedback",
        'j = outputs.join(lab, on=["ticker", "horizon"], )',
    ): 'how="inner" is polars\' default join',
    ("finrag_dagster/core/memory/feedback.py", "build_feedback", "ctx = _contexts_in_order(contexts) if stance or contexts.height else {}"): (
        "ctx is read only under the passage_stance rule: building it for the other rule changes no row"
    ),
    (
        "finrag_dagster/core/memory/feedback.py",
        "build_feedback",
        'top5 = _families_in_context(contexts, family_of if (fine) or True else None) if credit == "top5" and contexts.height else {}',
    ): "when the map is not fine it is None or seed 000's identity map, whose family is the source_family the None branch reads",
    (
        "finrag_dagster/core/memory/feedback.py",
        "build_feedback",
        "stanced_of[key] = [(p, family_of.family(p, None), v) for p, f, v in st_] if fine else st_",
    ): _BY_ID,
    (
        "finrag_dagster/core/memory/feedback.py",
        "build_feedback",
        'fams = sorted({family_of.family(p, None) for p, f in zip(r["valid_passages"], r["cited_families"])})',
    ): _BY_ID,
    (_LOOP_IO, "family_feedback", "last = " + _PRICES.format("columns=None")): _COLUMNS,
    (_LOOP_IO, "family_feedback", "last = " + _PRICES.format("")): _COLUMNS,
    (_LOOP_IO, "weights_for", "prev = [b for b in bounds if b[1] <= start]"): (
        "start is the first session of a split and splits never share a day (the settings reject overlaps): no split ends on it"
    ),
    (_CAL, "TradingCalendar.sessions_in_range", 'lo = np.searchsorted(self.sessions, np.datetime64(_as_date(start), ), side="left")'): _UNIT,
    (_CAL, "TradingCalendar.sessions_in_range", 'hi = np.searchsorted(self.sessions, np.datetime64(_as_date(end), ), side="right")'): _UNIT,
    (_CAL, "TradingCalendar.sessions_in_range", 'lo = np.searchsorted(self.sessions, np.datetime64(_as_date(start), "D"), )'): _SIDE,
    **{(_CAL, f"TradingCalendar.{m}", _DAY): _UNIT for m in ("is_session", "session_index", "next_session", "previous_session")},
    (_CAL, "TradingCalendar.previous_session", "i = int(np.searchsorted(self.sessions, d, )) - 1"): _SIDE,
    (_CAL, "TradingCalendar.close_time", 'return pd.Timestamp(int(self.closes_ns[self.session_index(day)]), tz="utc")'): _UTC,
    (_CAL, "TradingCalendar.open_time", 'return pd.Timestamp(int(self.opens_ns[self.session_index(day)]), tz="utc")'): _UTC,
    (_CAL, "TradingCalendar.decision_day", "return self.decision_days(np.array([ts.tz_convert(None).value], dtype=np.int64))[0].item()"): _NS,
    (_CAL, "TradingCalendar.decision_day", 'return self.decision_days(np.array([ts.tz_convert("utc").value], dtype=np.int64))[0].item()'): _UTC,
    (_CAL, "TradingCalendar.decision_day", 'return self.decision_days(np.array([ts.tz_convert("UTC").value], dtype=None))[0].item()'): _INT,
    (_CAL, "TradingCalendar.decision_day", 'return self.decision_days(np.array([ts.tz_convert("UTC").value], ))[0].item()'): _INT,
    (_CAL, "TradingCalendar.decision_days", "idx = np.searchsorted(self.closes_ns, public_ns, )"): _SIDE,
    (_CAL, "TradingCalendar.decision_close_ns", "idx = np.searchsorted(self.closes_ns, np.asarray(public_ns, dtype=np.int64), )"): _SIDE,
    **{
        (_CAL, "TradingCalendar.decision_close_ns", f'idx = np.searchsorted(self.closes_ns, np.asarray(public_ns, {a}), side="left")'): _SEARCH
        for a in ("dtype=None", "")
    },
    (_CAL, "date_only_public_time", 'return pd.Timestamp(dt.datetime(d.year, d.month, d.day, 23, 59, 59), tz=NY).tz_convert("utc")'): _UTC,
    (_CAL, "eastern_to_utc", 'return ts.tz_convert("utc")'): _UTC,
    (_CAL, "eastern_to_utc", 'return ts.tz_localize(NY, ambiguous=True, nonexistent="shift_forward").tz_convert("utc")'): _UTC,
    **{
        (_CAL, "date_only_public_ns", "local = " + _LOCALIZE.format(a)): _DST
        for a in (
            'ambiguous=None, nonexistent="shift_forward"',
            'nonexistent="shift_forward"',
            "ambiguous=False, ",
            'ambiguous=True, nonexistent="shift_forward"',
        )
    },
    (_CAL, "date_only_public_ns", "return local.tz_convert(None).asi8"): _NS,
    (_CAL, "date_only_public_ns", 'return local.tz_convert("utc").asi8'): _UTC,
    (_EVIDENCE, "pit_violations", "lo = int(cal.closes_ns[i - 1]) if i > 0 else -(3**62)"): _NO_BOUND,
    (_EVIDENCE, "pit_violations", "lo = int(cal.closes_ns[i - 1]) if i > 0 else -(2**63)"): _NO_BOUND,
    (_CARD, "build_cards", "mk = m.row(None, named=True)"): _ONE_ROW,
    (_CARD, "build_cards", "mk = m.row(named=True)"): _ONE_ROW,
    (_CARD, "write_cards", 'rets = lake.read("returns", dates=None)'): _ALL_DAYS,
    (_CARD, "write_cards", 'rets = lake.read("returns", )'): _ALL_DAYS,
}

STATUS = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    36: "timeout",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
}
ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "DAGSTER_HOME": str(ROOT / ".dagster_home"),
    "OMP_NUM_THREADS": "1",
    "POLARS_MAX_THREADS": "1",
}


@dataclass
class Result:
    path: str
    counts: dict[str, int] = field(default_factory=dict)
    survivors: list[str] = field(default_factory=list)
    equivalent: dict[str, str] = field(default_factory=dict)  # survivor -> reason
    seconds: float = 0.0
    note: str = ""

    def n(self, status: str) -> int:
        return self.counts.get(status, 0)


def resolve(arg: str) -> Target:
    """A module argument (``finrag_dagster/core/calendar.py``, ``core/calendar.py``) as a Target
    (one outside MODULES is tested with its ``tests/unit/test_<name>.py`` when that exists)."""
    path = arg if arg.startswith(PACKAGE + "/") else f"{PACKAGE}/{arg}"
    if not (ROOT / path).is_file():
        raise SystemExit(f"no such module: {path}")
    for t in MODULES:
        if t.path == path:
            return t
    guess = f"{U}test_{Path(path).stem}.py"
    if not (ROOT / guess).is_file():
        raise SystemExit(f"{path} is not in MODULES and has no {guess}: add it to MODULES in scripts/mutants.py with its tests")
    return Target(path, (guess,))


def changed_targets(base: str) -> list[Target]:
    """The MODULES whose file or one of whose test files differs between ``base`` (where the branch
    left it) and the working tree: committed and uncommitted changes alike."""
    fork = subprocess.run(["git", "merge-base", base, "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if fork.returncode != 0:
        raise SystemExit(f"--changed {base}: git cannot find that base ({fork.stderr.strip()}); name one, e.g. --changed HEAD~3")
    out = subprocess.run(["git", "diff", "--name-only", fork.stdout.strip()], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"git diff --name-only {base} failed: {out.stderr.strip()}")
    changed = set(out.stdout.split())
    return [t for t in MODULES if t.path in changed or changed & set(t.tests)]


def mangled(module: str, function: str) -> str:
    """mutmut's name of a function's mutants (``x_f`` for a function, ``xǁCǁm`` for a method), as a glob."""
    if "." in function:
        cls, meth = function.split(".", 1)
        return f"{module}.x\u01c1{cls}\u01c1{meth}__mutmut_*"
    return f"{module}.x_{function}__mutmut_*"


def module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def workdir(t: Target) -> Path:
    """mutants/<module>/: its pyproject.toml (the repository's [tool.mutmut] and pytest settings,
    this module's only_mutate and tests) and links to the package and the tests."""
    d = WORK / module_name(t.path).removeprefix(PACKAGE + ".")
    d.mkdir(parents=True, exist_ok=True)
    for name in (PACKAGE, "tests"):
        link = d / name
        if not link.is_symlink():
            link.symlink_to(Path("..", "..", name))
    import tomli_w

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mutmut = dict(project.get("tool", {}).get("mutmut", {}))
    mutmut.update(source_paths=[PACKAGE], only_mutate=[t.path], pytest_add_cli_args_test_selection=list(t.tests))
    pytest_ini = project.get("tool", {}).get("pytest", {}).get("ini_options", {})
    text = tomli_w.dumps({"tool": {"mutmut": mutmut, "pytest": {"ini_options": pytest_ini}}})
    cfg = d / "pyproject.toml"
    if not cfg.exists() or cfg.read_text() != text:
        cfg.write_text(text)
    return d


def read_results(d: Path, t: Target) -> dict[str, str]:
    """mutant name -> status, from mutmut's record of the module (only the listed functions)."""
    meta = d / "mutants" / (t.path + ".meta")
    if not meta.exists():
        return {}
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    pats = [re.compile(re.escape(mangled(module_name(t.path), f)).replace(r"\*", ".*") + "$") for f in t.functions]
    return {k: ("not checked" if v is None else STATUS.get(v, "other")) for k, v in codes.items() if not pats or any(p.match(k) for p in pats)}


def mutmut(d: Path, args: list[str], deadline: float, max_children: int) -> str:
    """Run ``mutmut run`` in ``d`` until the deadline; returns "" or why it stopped."""
    env = os.environ | ENV
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *args]
    log = (d / "mutmut.log").open("a")
    p = subprocess.Popen(cmd, cwd=d, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        p.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        stop(p)
        return "time limit: cut short"
    except BaseException:  # Ctrl-C, SIGTERM: mutmut and its workers go too
        stop(p)
        raise
    finally:
        log.close()
    return "" if p.returncode == 0 else f"mutmut exited {p.returncode} (see {(d / 'mutmut.log').relative_to(ROOT)})"


def stop(p: subprocess.Popen) -> None:
    """End mutmut's process group (its fork server and workers)."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    except ProcessLookupError:
        pass


def changed_lines(d: Path, name: str) -> tuple[str, str]:
    """The original and the mutated line of a mutant (the first '-' and '+' lines of ``mutmut show``), stripped."""
    out = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=d, capture_output=True, text=True, env=os.environ | ENV)
    first = {}
    for ln in out.stdout.splitlines():
        if ln[:1] in "+-" and not ln.startswith(("+++", "---")):
            first.setdefault(ln[0], ln[1:].strip())
    return first.get("-", ""), first.get("+", "")


def equivalent_reason(path: str, function: str, original: str, mutated: str) -> str | None:
    """The reason a survivor is equivalent: its key names the mutated line, or ``original => mutated``
    where one mutated line (``b = None``) stands for mutants of several lines of one function."""
    return EQUIVALENT.get((path, function, f"{original} => {mutated}")) or EQUIVALENT.get((path, function, mutated))


def function_of(name: str) -> str:
    fn = name.rsplit(".", 1)[1].split("__mutmut_")[0]
    return fn.removeprefix("x_") if fn.startswith("x_") else fn[1:].replace("\u01c1", ".").strip(".")


def run_module(t: Target, deadline: float, max_children: int) -> Result:
    """Mutate one module: every unchecked mutant first, then the earlier survivors again."""
    start = time.monotonic()
    res = Result(t.path)
    d = workdir(t)
    digest = hashlib.sha256(b"".join((ROOT / f).read_bytes() for f in t.tests)).hexdigest()
    if (d / "tests.sha256").exists() and (d / "tests.sha256").read_text() != digest:
        shutil.rmtree(d / "mutants", ignore_errors=True)  # a test changed: mutmut's map of tests and its verdicts are stale
    (d / "tests.sha256").write_text(digest)
    globs = [mangled(module_name(t.path), f) for f in t.functions]
    before = {k for k, s in read_results(d, t).items() if s == "survived"}
    res.note = mutmut(d, globs, deadline, max_children)
    # mutmut keeps a verdict it has; named mutants (the globs) are always tested again
    again = sorted(k for k, s in read_results(d, t).items() if s == "survived" and k in before)
    if again and not res.note and not globs:
        res.note = mutmut(d, again, deadline, max_children)
    status = read_results(d, t)
    for s in status.values():
        res.counts[s] = res.counts.get(s, 0) + 1
    for name in sorted(k for k, s in status.items() if s == "survived"):
        reason = equivalent_reason(t.path, function_of(name), *changed_lines(d, name))
        if reason:
            res.equivalent[name] = reason
        else:
            res.survivors.append(name)
    res.seconds = time.monotonic() - start
    return res


def table(results: list[Result], skipped: list[Target]) -> str:
    head = f"{'module':<46} {'mutants':>7} {'killed':>6} {'survived':>8} {'equiv.':>6} {'timeout':>7} {'no tests':>8} {'score':>6} {'time':>7}"
    rows = [head, "-" * len(head)]
    for r in results:
        live = r.n("killed") + r.n("timeout") + len(r.survivors)
        score = f"{100 * (r.n('killed') + r.n('timeout')) / live:.1f}%" if live else "-"
        rows.append(
            f"{r.path.removeprefix(PACKAGE + '/'):<46} {sum(r.counts.values()):>7} {r.n('killed'):>6} {len(r.survivors):>8} {len(r.equivalent):>6}"
            f" {r.n('timeout'):>7} {r.n('no tests'):>8} {score:>6} {r.seconds:>6.0f}s" + (f"  {r.note}" if r.note else "")
        )
    rows += [f"{t.path.removeprefix(PACKAGE + '/'):<46} not run (time limit)" for t in skipped]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", nargs="*", help="module paths (finrag_dagster/core/calendar.py or core/calendar.py); default: MODULES")
    ap.add_argument("--changed", nargs="?", const="origin/main", metavar="BASE", help="only the modules changed since BASE (default origin/main)")
    ap.add_argument("--time-limit", type=float, default=3600, metavar="S", help="seconds for the whole run (default 3600)")
    ap.add_argument("--max-children", type=int, default=2, help="mutants tested at once (default 2)")
    ap.add_argument("--fresh", action="store_true", help="forget earlier results of these modules")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # runs the clean-up of a module's mutmut
    if shutil.which("git") is None and a.changed:
        raise SystemExit("--changed needs git")
    targets = changed_targets(a.changed) if a.changed else [resolve(m) for m in a.modules] or list(MODULES)
    if not targets:
        print(f"no point-in-time module (or its tests) changed since {a.changed}: nothing to mutate")
        return 0
    t0 = time.monotonic()
    deadline = t0 + a.time_limit
    results, skipped = [], []
    for t in targets:
        if a.fresh:
            shutil.rmtree(workdir(t) / "mutants", ignore_errors=True)
        if time.monotonic() > deadline - 30:
            skipped.append(t)
            continue
        print(f"mutating {t.path} ({', '.join(t.functions) or 'every function'}) with {', '.join(t.tests)}", flush=True)
        results.append(run_module(t, deadline, a.max_children))
    print(table(results, skipped))
    for r in results:
        for name in r.survivors:
            print(f"survived: {name}  (cd {workdir(Target(r.path, ())).relative_to(ROOT)} && {Path(sys.executable).name} -m mutmut show {name})")
    print(f"run took {time.monotonic() - t0:.0f} s on {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M %Z')}")
    return 1 if skipped or any(r.survivors or r.note for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
