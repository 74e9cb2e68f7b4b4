"""How the pipeline's cost grows: every stage at several sizes, with Dagster's own share measured.

    .venv/bin/python benchmarks/scale.py --days 20,40,80 --tickers 30
    .venv/bin/python benchmarks/scale.py --axis tickers --tickers 15,30,60 --days 40

Runs the whole pipeline (``finrag demo``'s stages: sources, history, decisions, selection, loop,
evaluation) on the embedded world once per size, each into a fresh lake and a fresh SQLite Dagster
instance, and prints per stage: wall time, peak RSS (the process's ``VmHWM``, reset before each
stage; each size runs in its own process, so a stage's peak includes what earlier stages of that
size left allocated), rows written, lake bytes, and Dagster's bookkeeping share. The share is the wall time of an
**empty-bodied twin** of the same asset graph: the same keys, dependencies, partitions, backfill
policy and checks, whose bodies only report success. It is materialised with the same selection
and partition ranges on an instance of the same type, in the same run. The growth exponent of each
stage is the slope of log(wall) on log(size), fitted over the sizes (1.0 = linear).

``--axis days`` grows the decision days (the history look-back from ``--history-start`` is the same
at every size, so the history stage grows only with the days added at its end); ``--axis
tickers`` grows the universe (anchors grow with it). Splits are compact (train, validation and test
thirds of the decision days), as in configs/demo.toml.

``--config FILE`` runs one settings file as it stands (its world, calendar, splits and families),
for example seed 000's five-year workload::

    .venv/bin/python benchmarks/scale.py --config configs/paper_scale.toml --dir runs --progress runs/paper_scale.jsonl

It runs as a backfill by calendar year would: the sources once, then for each year of decisions the
history, the previous year's last labels and feedback again (their horizons mature in this year's
prices: what the matured_feedback sensor requests), the
decisions, the Table 6 selection once the validation split is decided, and the loop; the evaluation
last. Each phase is appended to ``--progress`` as a JSON line as it ends, with wall time, the
process's CPU seconds (a phase that shared the machine shows more wall than CPU), peak RSS and, for
the loop, its cost per decision day by quarter (from the progress lines the loop assets write to the
run log every 20 days). The same command resumes a stopped run at the first phase not in the file;
``--stop-file`` stops it cleanly between phases.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from finrag_dagster.core.calendar import nyse  # noqa: E402
from finrag_dagster.core.settings import HORIZONS, Settings, load_settings  # noqa: E402
from finrag_dagster.defs.build import build_definitions  # noqa: E402
from finrag_dagster.pipeline import RANGE_END, RANGE_START, RunOptions, run_range, stages  # noqa: E402


# ---------------------------------------------------------------------------- memory
def _status(field: str) -> int:
    with open("/proc/self/status") as fh:
        for ln in fh:
            if ln.startswith(field + ":"):
                return int(ln.split()[1]) // 1024
    return 0


def reset_peak() -> bool:
    """Reset this process's peak RSS (Linux ``clear_refs`` 5); False where the kernel refuses."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


# ---------------------------------------------------------------------------- settings
def settings_for(
    lake: Path,
    tickers: int,
    days: int,
    families: list[str],
    history_start: dt.date,
    decision_start: dt.date,
    echo: bool,
    events: float | None = None,
    engine: str = "local",
) -> Settings:
    cal = nyse()
    sessions = cal.sessions_in_range(decision_start, decision_start + dt.timedelta(days=days * 2 + 30))[:days]
    end = sessions[-1]
    a, b = sessions[len(sessions) // 3 - 1], sessions[2 * len(sessions) // 3 - 1]
    return Settings(
        lake_dir=lake,
        world={
            "n_tickers": tickers,
            "start": history_start,
            "end": max(end, dt.date(2019, 12, 31)),
            "press_release_echo": echo,
            **({"events_per_ticker_year": events} if events else {}),
        },
        calendar={"start": history_start, "end": end, "decision_start": decision_start},
        splits={"train": (decision_start, a), "validation": (a + dt.timedelta(days=1), b), "test": (b + dt.timedelta(days=1), end)},
        variants={"families": tuple(families)},
        execution=engine_settings(engine),
    )


def engine_settings(engine: str) -> dict:
    """``local`` or ``ray:N`` (a local Ray of N CPUs started by the run), each optionally with
    ``+pK`` (a stage's independent steps in K processes, ``execution.processes``), as an
    [execution] section."""
    engine, _, procs = engine.partition("+p")
    if procs and (not procs.isdigit() or int(procs) < 1):
        raise SystemExit(f"--engine: +pK needs K >= 1 processes, not {procs!r}")
    out = {"processes": int(procs)} if procs else {}
    if engine == "local":
        return {"engine": "local", **out}
    kind, _, n = engine.partition(":")
    if kind != "ray" or not n.isdigit() or int(n) < 1:
        raise SystemExit(f"--engine: give local or ray:N (N CPUs), optionally +pK (K processes), not {engine!r}")
    return {"engine": "ray", "num_cpus": int(n), **out}


def lake_digest(root: Path) -> str:
    """One digest of every parquet file of a lake (the reader cache's wall-clock latency left out)."""
    import hashlib

    import polars as pl

    h = hashlib.sha256()
    for p in sorted(root.rglob("*.parquet")):
        if "_staging" in p.parts:
            continue
        rel = str(p.relative_to(root))
        data = pl.read_parquet(p).drop("latency_ms").write_ipc(None).getvalue() if rel.startswith("reader_cache/") else p.read_bytes()
        h.update(rel.encode() + hashlib.sha256(data).digest())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------------------- the twin
def _empty_body(keys: tuple, checks: tuple):
    def body(context):
        for k in keys:
            if k in context.selected_asset_keys:
                yield dg.MaterializeResult(asset_key=k)
        for c in checks:
            if c.asset_key in context.selected_asset_keys:
                yield dg.AssetCheckResult(asset_key=c.asset_key, check_name=c.name, passed=True)

    return body


def twin_assets(defs: dg.Definitions, checks: bool = True) -> list[dg.AssetsDefinition]:
    """Empty-bodied copies of every asset: same keys, deps, partitions, backfill policy, and (with
    ``checks``) the same asset checks, each reporting a pass."""
    out = []
    for ad in defs.assets:
        specs = list(ad.specs)  # keys, deps with their partition mappings, partitions, groups
        checks_of = list(ad.check_specs) if checks else []
        body = _empty_body(tuple(ad.keys), tuple(checks_of))

        name = "twin_" + "_".join("__".join(k.path) for k in ad.keys)[:60] + f"_{len(out)}"
        out.append(
            dg.multi_asset(
                specs=specs,
                check_specs=checks_of or None,
                name=name,
                partitions_def=ad.partitions_def,
                backfill_policy=ad.backfill_policy,
                can_subset=len(specs) > 1,
            )(body)
        )
    return out


def run_twin(settings: Settings, instance: dg.DagsterInstance, checks: bool = True) -> dict[str, float]:
    """Wall seconds per stage of the empty twin, same selections and ranges as :func:`run_range`."""
    cal = nyse()
    hist = cal.sessions_in_range(settings.calendar.start, settings.calendar.end)
    dec = cal.sessions_in_range(settings.calendar.decision_start, settings.calendar.end)
    twins = twin_assets(build_definitions(settings), checks)  # only the graph: the twin's bodies use no resource
    out = {}
    for st in stages(settings):
        tags = {}
        if st.span is not None:
            d = hist if st.span == "history" else dec
            tags = {RANGE_START: d[0].isoformat(), RANGE_END: d[-1].isoformat()}
        t0 = time.perf_counter()
        dg.materialize(
            twins,
            selection=[dg.AssetKey.from_user_string(n) for n in st.assets],
            instance=instance,
            tags=tags,
            raise_on_error=True,
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        )
        out[st.name] = time.perf_counter() - t0
    return out


def partitions_per_stage(settings: Settings) -> dict[str, int]:
    """Partitions each stage materialises: the history sessions, the decision days, or 1 (unpartitioned)."""
    cal = nyse()
    n = {"history": len(cal.sessions_in_range(settings.calendar.start, settings.calendar.end))}
    n["decisions"] = len(cal.sessions_in_range(settings.calendar.decision_start, settings.calendar.end))
    return {st.name: n.get(st.span, 1) if st.span else 1 for st in stages(settings)}


def print_check_cost(runs: list[dict]) -> None:
    """What Dagster adds for the asset checks (schema, point-in-time, the reader's blocking checks),
    per partition and stage: the empty twin with its checks against the same twin without them, in
    the same run. The checks' own reads of the lake are inside the real steps' time."""
    for r in runs:
        bare = r.get("twin_no_checks", {})
        if not bare:
            continue
        print(f"asset checks' bookkeeping at {r['days']} decision days (twin with checks, without, ms per partition):")
        for n, w in r["twin"].items():
            k = r["partitions"].get(n, 1)
            print(f"  {n:12s} {w:7.1f} s {bare[n]:7.1f} s ({w / max(bare[n], 1e-9):4.2f}x)  {(w - bare[n]) / k * 1000:7.1f} ms over {k} partitions")


# ---------------------------------------------------------------------------- one size
def lake_bytes(root: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in root.rglob("*"):
        if p.is_file():
            top = p.relative_to(root).parts[0]
            out[top] = out.get(top, 0) + p.stat().st_size
    return out


def _cpu() -> float:
    """CPU seconds of this process and of the step processes it has waited for (multiprocess executor)."""
    r, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def children_peak_mib() -> int:
    """The largest peak RSS of any step process so far (0 with one process; not reset per phase)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024


def loop_day_costs(inst: dg.DagsterInstance, run_id: str, days: list[str]) -> list[dict]:
    """Seconds per decision day of each loop asset, from its progress lines ('<family> loop:
    40/2516 variant-days ...', every 20 variant-days): one row per interval between two lines,
    dated by the decision day the interval ends on (variants run one after another over the days)."""
    import re

    pat = re.compile(r"^(\S+) loop: (\d+)/(\d+) variant-days")
    marks: dict[str, list[tuple[int, float]]] = {}
    for e in inst.all_logs(run_id):
        m = pat.match(e.user_message or "")
        if m:
            marks.setdefault(m.group(1), [(0, e.timestamp)])  # replaced below by the step start
            marks[m.group(1)].append((int(m.group(2)), e.timestamp))
    starts = {e.step_key: e.timestamp for e in inst.all_logs(run_id, of_type=dg.DagsterEventType.STEP_START)}
    out = []
    for fam, pts in marks.items():
        t0 = next((t for k, t in starts.items() if k.startswith(fam)), pts[0][1])
        pts[0] = (0, t0)
        for (a, ta), (b, tb) in zip(pts, pts[1:]):
            if b > a:
                out.append(
                    {
                        "family": fam,
                        "day": days[(b - 1) % len(days)],
                        "variant": (b - 1) // len(days),
                        "days": b - a,
                        "s_per_day": (tb - ta) / (b - a),
                    }
                )
    return out


def quarter_costs(rows: list[dict]) -> dict[str, float]:
    """Loop seconds per decision day (all families together) by calendar quarter."""
    agg: dict[tuple[str, str, int], list[float]] = {}
    for r in rows:
        d = dt.date.fromisoformat(r["day"])
        q = f"{d.year}Q{(d.month - 1) // 3 + 1}"
        agg.setdefault((q, r["family"], r["variant"]), []).append(r["s_per_day"])
    per_q: dict[str, float] = {}
    for (q, _f, _v), xs in agg.items():
        per_q[q] = per_q.get(q, 0.0) + float(np.median(xs))
    return dict(sorted(per_q.items()))


def measure(settings: Settings, twin: bool = True) -> dict:
    """Run every stage; wall, CPU, peak RSS and the asset steps' own times per stage."""
    marks: list[tuple[str, float, float]] = []
    peaks: dict[str, int] = {}
    t0 = time.perf_counter()

    def close_stage(now: float, cpu: float) -> None:
        name, start, c0 = marks[-1]
        peaks[name] = _status("VmHWM")
        line = {
            "stage": name,
            "wall_s": round(now - start, 1),
            "cpu_s": round(cpu - c0, 1),
            "peak_mib": peaks[name],
            "at": dt.datetime.now().isoformat(timespec="seconds"),
            "since_start_s": round(now - t0, 1),
        }
        print("STAGE " + json.dumps(line), flush=True)

    def on_stage(st, names):
        if marks:
            close_stage(time.perf_counter(), _cpu())
        reset_peak()
        marks.append((st.name, time.perf_counter(), _cpu()))

    with dg.instance_for_test() as inst:
        results = run_range(settings, instance=inst, options=RunOptions(on_stage=on_stage))
        t_end = time.perf_counter()
        cpu_end = _cpu()
        close_stage(t_end, cpu_end)
        cal = nyse()
        dec = [d.isoformat() for d in cal.sessions_in_range(settings.calendar.decision_start, settings.calendar.end)]
        day_costs = []
        for res in results:
            day_costs += loop_day_costs(inst, res.run_id, dec)
        steps: dict[str, float] = {}
        for res in results:
            starts = {}
            for e in inst.all_logs(res.run_id, of_type={dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS}):
                if e.dagster_event.event_type == dg.DagsterEventType.STEP_START:
                    starts[e.step_key] = e.timestamp
                elif e.step_key in starts:
                    steps[e.step_key] = steps.get(e.step_key, 0.0) + e.timestamp - starts[e.step_key]
    wall, cpu = {}, {}
    for i, (name, start, c0) in enumerate(marks):
        stop = marks[i + 1][1] if i + 1 < len(marks) else t_end
        wall[name] = stop - start
        cpu[name] = (marks[i + 1][2] if i + 1 < len(marks) else cpu_end) - c0
    tw: dict[str, float] = {}
    bare: dict[str, float] = {}
    if twin:
        with dg.instance_for_test() as inst:
            tw = run_twin(settings, inst)
        with dg.instance_for_test() as inst:  # the same twin without its asset checks: what Dagster adds for them
            bare = run_twin(settings, inst, checks=False)
    import pyarrow.parquet as pq

    from finrag_dagster.core.tables import Lake

    lake = Lake(settings.lake_dir)
    rows = {
        t: sum(pq.ParquetFile(f).metadata.num_rows for f in lake.partition_files(t))
        for t in ("news_raw", "evidence", "anchors", "candidates", "labels")
    }
    return {
        "wall": wall,
        "cpu": cpu,
        "peak_mib": peaks,
        "steps": steps,
        "twin": tw,
        "twin_no_checks": bare,
        "partitions": partitions_per_stage(settings),
        "total": t_end - t0,
        "rows": rows,
        "lake_bytes": lake_bytes(Path(settings.lake_dir)),
        "loop_quarters": quarter_costs(day_costs),
    }


# ---------------------------------------------------------------------------- one settings file, year by year
def _done(progress: Path) -> dict[tuple[str, str], dict]:
    """The phases a progress file records as finished, keyed by (chunk, stage)."""
    out = {}
    if progress.exists():
        for ln in progress.read_text().splitlines():
            if ln.strip():
                r = json.loads(ln)
                if "chunk" in r:
                    out[(r["chunk"], r["stage"])] = r
    return out


def chunk_plan(settings: Settings) -> list[tuple[str, list[str], dict]]:
    """(chunk, stage names, run_range arguments) in order: sources once; then per calendar year of
    decisions: history, the previous year's last labels and feedback again (their horizons matured in
    this year's prices: what the matured_feedback sensor requests day by day), decisions, selection once the validation
    split is decided, loop; evaluation last."""
    cal = nyse()
    dec = cal.sessions_in_range(settings.calendar.decision_start, settings.calendar.end)
    years = sorted({d.year for d in dec})
    st = {s.name: list(s.assets) for s in stages(settings)}
    plan: list[tuple[str, list[str], dict]] = [("all", ["sources"], {"only": st["sources"]})]
    val_end = settings.splits.validation[1]
    matured = ["labels"] + [a for a in st["loop"] if a.endswith("/feedback")]  # what the matured_feedback sensor requests
    selected = False
    prev: list[dt.date] = []
    for i, y in enumerate(years):
        days = [d for d in dec if d.year == y]
        rng = {"end": days[-1], "decision_start": days[0]}
        plan.append((str(y), ["history"], {**rng, "history_start": settings.calendar.start if i == 0 else days[0], "only": st["history"]}))
        if prev:
            tail = prev[-(max(HORIZONS) + 1) :]
            plan.append((str(y), ["labels_matured"], {"end": tail[-1], "decision_start": tail[0], "only": matured}))
        plan.append((str(y), ["decisions"], {**rng, "only": st["decisions"]}))
        if not selected and days[-1] >= val_end:
            plan.append((str(y), ["selection"], {**rng, "only": st["selection"]}))
            selected = True
        plan.append((str(y), ["loop"], {**rng, "only": st["loop"]}))
        prev = days
    plan.append(("all", ["evaluation"], {"only": st["evaluation"]}))
    return plan


def settings_digest(settings: Settings) -> str:
    """What fixes a run's world and phases: the world, calendar, splits, families and lake folder."""
    import hashlib

    d = settings.model_dump(mode="json")
    key = {k: d[k] for k in ("world", "calendar", "splits", "lake_dir")} | {"families": d["variants"]["families"]}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def check_resumable(settings: Settings, progress: Path) -> None:
    """A progress file belongs to one set of settings: record their digest on the first run, and
    refuse to resume under other settings (the phases already run would belong to another world)."""
    want = settings_digest(settings)
    lines = [json.loads(ln) for ln in progress.read_text().splitlines() if ln.strip()] if progress.exists() else []
    have = [r["settings_digest"] for r in lines if "settings_digest" in r]
    if have and have[0] != want:
        raise SystemExit(
            f"{progress} was written under other settings (digest {have[0]}, now {want}): "
            "resume with the settings it started with, or give another --progress and --dir"
        )
    if not have:
        with open(progress, "a") as fh:
            fh.write(json.dumps({"settings_digest": want}) + "\n")


def measure_chunked(settings: Settings, progress: Path, stop_file: Path | None = None, twin: bool = True) -> dict | None:
    """Run a settings file phase by phase (:func:`chunk_plan`), appending each finished phase to
    ``progress``; a phase already there is skipped, so a stopped run resumes where it stopped.
    Returns the summary once every phase (and the twin) is recorded, else None."""
    cal = nyse()
    check_resumable(settings, progress)
    for chunk, (stage,), kw in chunk_plan(settings):
        if (chunk, stage) in _done(progress):
            continue
        if stop_file is not None and stop_file.exists():
            print(f"stop file {stop_file} found: stopping before {chunk} {stage}", flush=True)
            return None
        reset_peak()
        t0, c0 = time.perf_counter(), _cpu()
        with dg.instance_for_test() as inst:
            results = run_range(settings, instance=inst, **kw)
            wall, cpu = time.perf_counter() - t0, _cpu() - c0
            line = {
                "chunk": chunk,
                "stage": stage,
                "wall_s": round(wall, 1),
                "cpu_s": round(cpu, 1),
                "peak_mib": _status("VmHWM"),
                "peak_step_process_mib": children_peak_mib(),
                "at": dt.datetime.now().isoformat(timespec="seconds"),
            }
            if stage == "loop":
                days = [d.isoformat() for d in cal.sessions_in_range(kw["decision_start"], kw["end"])]
                rows = [r for res in results for r in loop_day_costs(inst, res.run_id, days)]
                line["loop_quarters"] = quarter_costs(rows)
        print("STAGE " + json.dumps(line), flush=True)
        with open(progress, "a") as fh:
            fh.write(json.dumps(line) + "\n")
    done = _done(progress)
    if twin and ("all", "twin") not in done:
        if stop_file is not None and stop_file.exists():
            return None
        with dg.instance_for_test() as inst:
            tw = run_twin(settings, inst)
        line = {
            "chunk": "all",
            "stage": "twin",
            "wall_s": round(sum(tw.values()), 1),
            "stages": tw,
            "at": dt.datetime.now().isoformat(timespec="seconds"),
        }
        with open(progress, "a") as fh:
            fh.write(json.dumps(line) + "\n")
        done = _done(progress)
    return summarise(settings, done)


def retime_loop(settings: Settings, quarters: list[str]) -> dict[str, dict]:
    """Re-run the loop phase of each named quarter ("2019Q1") alone on an already-run lake (give a
    copy: the loop's partitions are rewritten) and time it: seconds per decision day of the loop as in
    ``loop_quarters``, and the phase's wall and CPU seconds per decision day. Each quarter reads the
    memory its previous day left, so quarters can be timed in any order, on a machine kept idle."""
    cal = nyse()
    st = {s.name: list(s.assets) for s in stages(settings)}
    out: dict[str, dict] = {}
    for q in quarters:
        year, n = int(q[:4]), int(q[-1])
        first, last = dt.date(year, 3 * n - 2, 1), dt.date(year + (n == 4), 1 if n == 4 else 3 * n + 1, 1) - dt.timedelta(days=1)
        days = [d for d in cal.sessions_in_range(first, last) if settings.calendar.decision_start <= d <= settings.calendar.end]
        if not days:
            raise SystemExit(f"{q} has no decision days in these settings")
        t0, c0 = time.perf_counter(), _cpu()
        with dg.instance_for_test() as inst:
            results = run_range(settings, instance=inst, decision_start=days[0], end=days[-1], only=st["loop"])
            wall, cpu = time.perf_counter() - t0, _cpu() - c0
            iso = [d.isoformat() for d in days]
            rows = [r for res in results for r in loop_day_costs(inst, res.run_id, iso)]
        out[q] = {
            "days": len(days),
            "loop_s_per_day": quarter_costs(rows).get(q, float("nan")),
            "wall_s_per_day": wall / len(days),
            "cpu_s_per_day": cpu / len(days),
        }
        print(f"RETIME {q} " + json.dumps(out[q]), flush=True)
    return out


def summarise(settings: Settings, done: dict[tuple[str, str], dict]) -> dict:
    """Per stage: wall and CPU summed over the years, the highest peak RSS; the loop's seconds per
    decision day by quarter; rows and lake bytes of the finished lake."""
    import pyarrow.parquet as pq

    from finrag_dagster.core.tables import Lake

    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}
    peak: dict[str, int] = {}
    quarters: dict[str, float] = {}
    for (_c, stage), r in done.items():
        if stage == "twin":
            continue
        name = "decisions" if stage == "labels_matured" else stage
        wall[name] = wall.get(name, 0.0) + r["wall_s"]
        cpu[name] = cpu.get(name, 0.0) + r["cpu_s"]
        peak[name] = max(peak.get(name, 0), r["peak_mib"])
        quarters.update(r.get("loop_quarters", {}))
    twin = done.get(("all", "twin"), {}).get("stages", {})
    lake = Lake(settings.lake_dir)
    rows = {
        t: sum(pq.ParquetFile(f).metadata.num_rows for f in lake.partition_files(t))
        for t in ("news_raw", "evidence", "anchors", "candidates", "labels")
    }
    return {
        "wall": wall,
        "cpu": cpu,
        "peak_mib": peak,
        "twin": twin,
        "total": sum(wall.values()),
        "rows": rows,
        "lake_bytes": lake_bytes(Path(settings.lake_dir)),
        "loop_quarters": dict(sorted(quarters.items())),
    }


def partition_growth(root: Path, n: int = 60) -> list[dict]:
    """Per table (and variant): median rows and bytes of a daily partition over the first and the last
    ``n`` days it has. A table whose daily partition grows with the days already run shows bytes per
    row (or rows per anchor) rising; one that grows with the data shows rows rising with the input
    (news, anchors) and bytes per row flat."""
    import re

    import pyarrow.parquet as pq

    groups: dict[str, list[tuple[str, int, int]]] = {}
    for f in root.glob("*/**/date=*/*.parquet"):
        rel = f.relative_to(root).as_posix()
        if rel.startswith("_"):
            continue
        m = re.search(r"date=(\d{4}-\d{2}-\d{2})", rel)
        key = re.sub(r"/date=.*", "", rel)
        groups.setdefault(key, []).append((m.group(1), f.stat().st_size, pq.ParquetFile(f).metadata.num_rows))
    out = []
    for key, items in sorted(groups.items()):
        items.sort()
        if len(items) < 2 * n:
            continue
        a, b = items[:n], items[-n:]
        row = {"table": key, "days": len(items), "first": a[0][0], "last": b[-1][0]}
        for tag, part in (("first", a), ("last", b)):
            row[f"rows_{tag}"] = float(np.median([r for _, _, r in part]))
            row[f"bytes_{tag}"] = float(np.median([x for _, x, _ in part]))
            rows = sum(r for _, _, r in part)
            row[f"bytes_per_row_{tag}"] = sum(x for _, x, _ in part) / rows if rows else float("nan")
        row["bytes_per_row_ratio"] = row["bytes_per_row_last"] / row["bytes_per_row_first"] if row["bytes_per_row_first"] else float("nan")
        out.append(row)
    return out


def exponent(sizes: list[float], values: list[float]) -> float:
    if len(sizes) < 2 or min(values) <= 0:
        return float("nan")
    return float(np.polyfit(np.log(sizes), np.log(values), 1)[0])


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--axis", choices=["days", "tickers"], default="days")
    ap.add_argument("--days", default="20,40,80", help="decision days (a list on the days axis)")
    ap.add_argument("--tickers", default="30", help="universe size (a list on the tickers axis)")
    ap.add_argument("--families", default="no_memory,source_memory")
    ap.add_argument("--history-start", default="2017-10-02")
    ap.add_argument("--decision-start", default="2019-01-02")
    ap.add_argument("--echo", action="store_true", help="press-release echo on (the paper-scale profile)")
    ap.add_argument("--events", type=float, default=None, help="world.events_per_ticker_year (default: the world's)")
    ap.add_argument("--out", default=None, help="write the measurements as JSON here")
    ap.add_argument("--dir", default=None, help="where the lakes go (default: a temporary folder)")
    ap.add_argument("--config", default=None, help="run this settings file as one size (its own splits and families)")
    ap.add_argument(
        "--progress",
        default=None,
        help="with --config: append each finished phase here as a JSON line; phases already there are skipped "
        "(default: progress.jsonl beside the lake)",
    )
    ap.add_argument("--stop-file", default=None, help="with --config: stop cleanly before the next phase once this file exists")
    ap.add_argument("--no-twin", action="store_true", help="with --config: skip the empty-bodied twin (Dagster's share)")
    ap.add_argument(
        "--growth",
        default=None,
        metavar="LAKE",
        help="only report, for an existing lake, how each table's daily partition size changes from its first to its last 60 days",
    )
    ap.add_argument(
        "--retime-loop",
        default=None,
        metavar="QUARTERS",
        help="with --config and --dir: re-run only the loop phase of these quarters (e.g. 2019Q1,2023Q4) on the lake "
        "already in --dir (use a copy) and print their cost per decision day and the ratio last / first",
    )
    ap.add_argument(
        "--engine",
        default="local",
        help="where the heavy stages run: local, or ray:N (a local Ray of N CPUs); +pK runs a stage's independent steps in K processes",
    )
    ap.add_argument(
        "--processes", type=int, default=None, help="with --config: execution.processes (a stage's independent steps in this many processes)"
    )
    ap.add_argument(
        "--engines",
        default=None,
        help="compare engines instead of sizes, e.g. local,ray:1,ray:2: the first --days and --tickers value under each, "
        "with each engine's wall time per stage, its ratio to the first engine, and whether the lakes are the same bytes",
    )
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    return ap.parse_args()


def report_growth(args: argparse.Namespace) -> None:
    """``--growth``: each table's daily partition size, first 60 days against the last 60."""
    rows = partition_growth(Path(args.growth))
    print(f"{'table':44s} {'days':>5s} {'rows/day first 60':>18s} {'last 60':>8s} {'bytes/row first':>16s} {'last':>7s} {'ratio':>6s}")
    for r in rows:
        print(
            f"{r['table']:44s} {r['days']:5d} {r['rows_first']:18,.0f} {r['rows_last']:8,.0f} {r['bytes_per_row_first']:16,.0f} "
            f"{r['bytes_per_row_last']:7,.0f} {r['bytes_per_row_ratio']:6.2f}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


def run_config(args: argparse.Namespace) -> None:
    """``--config``: one settings file as it stands, phase by phase (resumable), or ``--retime-loop``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    s = load_settings(args.config)
    if args.dir:
        s = s.with_overrides(lake_dir=str(Path(args.dir) / "lake"))
    if args.processes is not None:
        s = s.with_overrides(execution={"processes": args.processes})
    n_days = len(nyse().sessions_in_range(s.calendar.decision_start, s.calendar.end))
    print(
        f"{args.config}: {s.world.n_tickers} tickers, {n_days} decision days, families {', '.join(s.variants.families)}; lake {s.lake_dir}",
        flush=True,
    )
    if args.retime_loop:
        qs = args.retime_loop.split(",")
        r = retime_loop(s, qs)
        for k in ("loop_s_per_day", "wall_s_per_day", "cpu_s_per_day"):
            print(f"{k}: " + ", ".join(f"{q} {r[q][k]:.2f}" for q in qs) + f"; {qs[-1]} / {qs[0]}: {r[qs[-1]][k] / r[qs[0]][k]:.2f}")
        if args.out:
            Path(args.out).write_text(json.dumps(r, indent=1))
        return
    progress = Path(args.progress or Path(s.lake_dir).parent / "progress.jsonl")
    m = measure_chunked(s, progress, Path(args.stop_file) if args.stop_file else None, twin=not args.no_twin)
    if m is None:
        print(f"stopped; run the same command again to resume (finished phases are in {progress})")
        return
    print_config_result(args, m, n_days, s)


def print_config_result(args: argparse.Namespace, m: dict, n_days: int, s: Settings) -> None:
    m.update(config=args.config, days=n_days, tickers=s.world.n_tickers)
    lake_mb = sum(v for k, v in m["lake_bytes"].items() if not k.startswith("_")) / 1e6
    print(
        f"total {m['total']:.0f} s (sum of the phases); peak RSS {max(m['peak_mib'].values())} MiB; lake {lake_mb:.0f} MB "
        f"({lake_mb / n_days:.2f} MB per decision day)"
    )
    for n in m["wall"]:
        tw = m["twin"].get(n)
        print(
            f"  {n:12s} wall {m['wall'][n]:9.1f} s  cpu {m['cpu'][n]:9.1f} s  peak {m['peak_mib'][n]:6d} MiB  "
            + (f"dagster twin {tw:7.1f} s ({tw / max(m['wall'][n], 1e-9):.0%})" if tw is not None else "")
        )
    q = m["loop_quarters"]
    print("loop s per decision day by quarter: " + ", ".join(f"{k} {v:.2f}" for k, v in q.items()))
    if q:
        first, last = next(iter(q)), list(q)[-1]
        print(f"loop cost per day, {last} / {first}: {q[last] / q[first]:.2f}")
    print("rows: " + ", ".join(f"{k} {v}" for k, v in m["rows"].items()))
    if args.out:
        Path(args.out).write_text(json.dumps(m, indent=1, default=str))


def run_one(args: argparse.Namespace, days: list[int], tickers: list[int]) -> None:
    """``--one``: one size, in this process (the parent starts one process per size); prints RESULT."""
    size = args.one
    n_days = size if args.axis == "days" else days[0]
    n_tick = size if args.axis == "tickers" else tickers[0]
    lake = Path(args.dir) / f"lake_{size}"
    s = settings_for(
        lake,
        n_tick,
        n_days,
        args.families.split(","),
        dt.date.fromisoformat(args.history_start),
        dt.date.fromisoformat(args.decision_start),
        args.echo,
        args.events,
        args.engine,
    )
    m = measure(s, twin=not args.engines)
    m.update(size=size, tickers=n_tick, days=n_days, engine=args.engine, digest=lake_digest(lake))
    print("RESULT " + json.dumps(m, default=str))


def run_sizes(args: argparse.Namespace, sizes: list[int]) -> tuple[list[str], list[dict]]:
    """Each size (or each engine) in its own process: the engines and one measurement per run."""
    engines = args.engines.split(",") if args.engines else [args.engine]
    if args.engines:
        sizes = sizes[:1]
    tmp = Path(tempfile.mkdtemp(dir=args.dir, prefix="finrag-scale-"))
    runs = []
    try:
        for size, engine in [(z, e) for z in sizes for e in engines]:
            print(f"size {size}, engine {engine} ...", flush=True)
            cmd = (
                [
                    sys.executable,
                    __file__,
                    "--one",
                    str(size),
                    "--dir",
                    str(tmp),
                    "--axis",
                    args.axis,
                    "--days",
                    args.days,
                    "--tickers",
                    args.tickers,
                    "--families",
                    args.families,
                    "--history-start",
                    args.history_start,
                    "--decision-start",
                    args.decision_start,
                    "--engine",
                    engine,
                ]
                + (["--engines", args.engines] if args.engines else [])
                + (["--echo"] if args.echo else [])
                + (["--events", str(args.events)] if args.events else [])
            )
            out = subprocess.run(cmd, capture_output=True, text=True)
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
            if out.returncode or not lines:
                sys.exit(f"size {size} failed:\n{out.stderr[-3000:]}")
            m = json.loads(lines[-1][7:])
            runs.append(m)
            shutil.rmtree(tmp / f"lake_{size}", ignore_errors=True)
            print(
                f"  {m['tickers']} tickers, {m['days']} decision days: total {m['total']:.0f} s; "
                + ", ".join(f"{k} {v:.0f} s" for k, v in m["wall"].items()),
                flush=True,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return engines, runs


def print_engines(args: argparse.Namespace, engines: list[str], runs: list[dict]) -> None:
    names = list(runs[0]["wall"])
    base = runs[0]
    print(f"\n{base['tickers']} tickers, {base['days']} decision days; families {args.families}; wall s per stage, ratio to {engines[0]}")
    print(f"{'stage':12s} " + " ".join(f"{e:>16s}" for e in engines))
    for n in [*names, "total"]:
        w = [r["wall"][n] if n != "total" else r["total"] for r in runs]
        print(f"{n:12s} " + " ".join(f"{x:8.1f} ({x / w[0]:4.2f}x)" for x in w))
    print("same lake bytes as " + engines[0] + ": " + ", ".join(f"{r['engine']} {r['digest'] == base['digest']}" for r in runs[1:]))
    if args.out:
        Path(args.out).write_text(json.dumps({"engines": engines, "runs": runs}, indent=1, default=str))


def print_sizes(args: argparse.Namespace, sizes: list[int], runs: list[dict]) -> None:
    names = list(runs[0]["wall"])
    print(f"\naxis: {args.axis}; sizes {sizes}; families {args.families}")
    print(
        f"{'stage':12s} "
        + " ".join(f"{'wall@' + str(s):>10s}" for s in sizes)
        + f" {'exponent':>9s} "
        + " ".join(f"{'RSS@' + str(s):>9s}" for s in sizes)
        + " "
        + " ".join(f"{'dagster@' + str(s):>11s}" for s in sizes)
    )
    for n in [*names, "total"]:
        w = [r["wall"][n] if n != "total" else r["total"] for r in runs]
        tw = [r["twin"][n] if n != "total" else sum(r["twin"].values()) for r in runs]
        rss = [str(r["peak_mib"].get(n, "")) if n != "total" else str(max(r["peak_mib"].values())) for r in runs]
        print(
            f"{n:12s} "
            + " ".join(f"{x:10.1f}" for x in w)
            + f" {exponent(sizes, w):9.2f} "
            + " ".join(f"{x:>9s}" for x in rss)
            + " "
            + " ".join(f"{t / x:11.0%}" for t, x in zip(tw, w))
        )
    print_check_cost(runs)
    print(
        "\nslowest asset steps at the largest size (s): "
        + ", ".join(f"{k} {v:.0f}" for k, v in sorted(runs[-1]["steps"].items(), key=lambda kv: -kv[1])[:8])
    )
    print(
        "lake MB per decision day: "
        + ", ".join(f"{r['size']}: {sum(v for k, v in r['lake_bytes'].items() if not k.startswith('_')) / 1e6 / r['days']:.2f}" for r in runs)
    )
    print("rows: " + "; ".join(f"{r['size']}: " + ", ".join(f"{k} {v}" for k, v in r["rows"].items()) for r in runs))
    if args.out:
        Path(args.out).write_text(json.dumps({"axis": args.axis, "sizes": sizes, "runs": runs}, indent=1, default=str))


def main() -> None:
    args = parse_args()
    if args.growth:
        return report_growth(args)
    if args.config:
        return run_config(args)
    days = [int(x) for x in args.days.split(",")]
    tickers = [int(x) for x in args.tickers.split(",")]
    sizes = days if args.axis == "days" else tickers
    if args.axis == "days" and len(tickers) != 1 or args.axis == "tickers" and len(days) != 1:
        sys.exit("give one value for the axis that does not grow")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.one is not None:
        return run_one(args, days, tickers)
    engines, runs = run_sizes(args, sizes)
    if args.engines:
        return print_engines(args, engines, runs)
    print_sizes(args, sizes, runs)


if __name__ == "__main__":
    main()
