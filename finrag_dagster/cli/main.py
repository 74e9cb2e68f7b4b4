"""`finrag`: the pipeline for people who are not in the Dagster UI."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from .options import LakeMissing, day
from .options import lake_to_read as _lake_to_read
from .options import settings_for as _settings

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, help="finrag: point-in-time financial RAG on Dagster.")
console = Console()
_state = {"debug": False}


@app.callback()
def _options(debug: Annotated[bool, typer.Option("--debug", help="on an error, print the full traceback too")] = False):
    """finrag: point-in-time financial RAG on Dagster."""
    _state["debug"] = debug


def main() -> None:
    """The `finrag` command: any error ends it with one short paragraph and exit code 1."""
    import sys

    from .errors import report

    try:
        app(prog_name="finrag")
    except KeyboardInterrupt:
        print("finrag: interrupted", file=sys.stderr)
        sys.exit(130)
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - the one place every error is turned into a message
        sys.exit(report(e, _state["debug"] or "--debug" in sys.argv))


DAGSTER_YAML = """event_log_storage:
  module: finrag_dagster.defs.event_log
  class: PooledSqliteEventLogStorage
  config:
    base_dir:
      env: DAGSTER_HOME
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  cancel_timeout_seconds: 180
  poll_interval_seconds: 30
python_logs:
  python_log_level: INFO
telemetry:
  enabled: false
nux:
  enabled: false
run_retries:
  enabled: true
  max_retries: 0
  retry_on_asset_or_op_failure: false
concurrency:
  pools:
    default_limit: 1
    granularity: op
"""


def ensure_dagster_home() -> Path:
    """DAGSTER_HOME for the demo: $DAGSTER_HOME, else ./.dagster_home (created with our dagster.yaml)."""
    home = Path(os.environ.get("DAGSTER_HOME") or ".dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    if not cfg.exists():
        cfg.write_text(DAGSTER_YAML)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


class LakeBusy(RuntimeError):
    """Another finrag process holds the lake's lock."""


def lake_lock(lake_dir: Path):
    """An exclusive lock on the lake for one `finrag demo` at a time; a second one fails at once, clearly."""
    from filelock import FileLock, Timeout

    lake_dir = Path(lake_dir)
    lake_dir.mkdir(parents=True, exist_ok=True)
    path = lake_dir / ".finrag.lock"
    lock = FileLock(str(path), timeout=0)

    class _Ctx:
        def __enter__(self):
            try:
                lock.acquire()
            except Timeout:
                raise LakeBusy(f"another finrag run is writing to the lake {lake_dir} (lock {path})") from None
            return lock

        def __exit__(self, *exc):
            lock.release()
            return False

    return _Ctx()


@app.command()
def world(
    seed: Annotated[Optional[int], typer.Option(help="world seed")] = None,
    tickers: Annotated[Optional[int], typer.Option(help="number of tickers (QQQ added)")] = None,
    config: Annotated[Optional[Path], typer.Option(help="settings TOML")] = None,
    lake: Annotated[Optional[str], typer.Option(help="lake folder, or an object-store URI (s3://bucket/prefix)")] = None,
):
    """Build the embedded synthetic world under <lake>/_world (raw files + planted truth)."""
    from ..sources.synthetic import generate_world

    s = _settings(config, lake)
    ws = s.world.model_copy(update={k: v for k, v in {"seed": seed, "n_tickers": tickers}.items() if v is not None})
    t0 = time.perf_counter()
    m = generate_world(ws, s.world_dir)
    console.print(f"world written to {s.world_dir} in {time.perf_counter() - t0:.1f}s: {m}")


@app.command()
def demo(
    start: Annotated[Optional[str], typer.Option(help="first decision day (YYYY-MM-DD)")] = None,
    end: Annotated[Optional[str], typer.Option(help="last decision day (YYYY-MM-DD; default: calendar.end of the settings)")] = None,
    tickers: Annotated[Optional[int], typer.Option(help="tickers in the synthetic world")] = None,
    seed: Annotated[Optional[int], typer.Option(help="synthetic world seed")] = None,
    config: Annotated[Optional[Path], typer.Option(help="settings TOML (default: $FINRAG_CONFIG or built-in)")] = None,
    lake: Annotated[Optional[str], typer.Option(help="lake folder (default: ./data_lake), or an object-store URI (s3://bucket/prefix)")] = None,
):
    """Build the world and materialise every asset over the demo period in one process."""
    from ..sources.preflight import preflight

    s = _settings(config, lake)
    end_d = day(end, "--end") if end else s.calendar.end
    start_d = day(start, "--start") if start else s.calendar.decision_start
    preflight(s, start_d, end_d)  # bad dates and missing files end here, before Dagster is imported or a run created

    import dagster as dg

    from ..pipeline import RunOptions, fail_orphaned_runs, run_range

    home = ensure_dagster_home()
    console.print(f"[bold]finrag demo[/bold]: decisions {start_d} .. {end_d}, history from {s.calendar.start}")
    console.print(f"lake: {s.lake_uri or s.lake_dir}   dagster instance: {home}")
    world_cfg = {k: v for k, v in {"seed": seed, "n_tickers": tickers}.items() if v is not None}
    t_all = time.perf_counter()
    timings = []

    def on_stage(st, names):
        timings.append((st.name, ", ".join(names), time.perf_counter()))
        console.print(f"  [cyan]▶ {st.name}[/cyan]: {', '.join(names)}")

    with lake_lock(s.lake_dir), dg.DagsterInstance.ephemeral() if os.environ.get("FINRAG_EPHEMERAL") else dg.DagsterInstance.get() as inst:
        for run_id in fail_orphaned_runs(inst):
            console.print(f"  marked run {run_id[:8]} FAILED: its finrag process was killed before it finished")
        run_range(
            s,
            end=end_d,
            decision_start=start_d,
            instance=inst,
            options=RunOptions(world_config=world_cfg or None, on_stage=on_stage, log_level="WARNING" if _state["debug"] else "CRITICAL"),
        )
        _timing(timings, time.perf_counter())
    console.print(f"done in {time.perf_counter() - t_all:.0f}s")
    print_summary(s, start_d, end_d)
    print_evaluation(s)
    console.print("Browse it: [bold]make dev[/bold] (Dagster UI on http://127.0.0.1:3000)")


def _timing(timings: list, end: float) -> None:
    t = Table(title="stage timings")
    t.add_column("stage")
    t.add_column("seconds", justify="right")
    for (name, _, start), nxt in zip(timings, [x[2] for x in timings[1:]] + [end]):
        t.add_row(name, f"{nxt - start:.0f}")
    console.print(t)


def print_evaluation(s) -> None:
    """Table 2- and Table 4-style summaries of the test split, and where the report is."""
    import polars as pl

    from ..core.evaluation.report import report_path
    from ..core.evaluation.tables import METRICS, PCT, PORTFOLIO, metrics_md
    from ..core.tables import open_lake

    lake = open_lake(s)
    if not lake.partition_files("evaluation"):
        return
    ev = lake.read("evaluation").filter(pl.col("split") == "test")
    changes = memory_change_rows(s, lake)
    for name, cols, pct in (("Table 2", METRICS, set()), ("Table 4", PORTFOLIO, PCT)):
        g = ev.filter(pl.col("table") == name)
        if g.height:
            console.print(f"[bold]{name}[/bold] (test split {s.splits.test[0]} .. {s.splits.test[1]})")
            console.print(metrics_md(g, list(dict.fromkeys(g["row"].to_list())), cols, pct), markup=False, highlight=False)
            _print_changes(name, changes, set(g["row"].to_list()))
    if lake.partition_files("experience_task"):
        from ..core.evaluation.experience import task_md

        res = lake.read("experience_task")
        for name, what in (("Table 1", "tsIC"), ("Table 6", "csIC")):
            console.print(f"[bold]Experience task, seed 002 {name}[/bold] ({what}, test split, sector targets)")
            console.print(task_md(res, name), markup=False, highlight=False)
    p = report_path(s)
    if p.exists():
        console.print(f"report: [bold]{p}[/bold]")


def memory_change_rows(s, lake) -> tuple[list[dict], str, str]:
    """(one row per memory family, its markdown table, the reach sentence) of what the memory changed on the test split."""
    from ..core.calendar import nyse
    from ..core.evaluation.changes import changes_md, family_rows, memory_changes, reach_sentence

    summary, _, reach = memory_changes(s, lake, nyse(), "test")
    return family_rows(summary), changes_md(summary, reach), reach_sentence(reach)


def _print_changes(table: str, changes: tuple[list[dict], str, str], rows: set[str]) -> None:
    """Under Tables 2 and 4: one line per memory row (what it changed against its twin); after Table 2's lines, every memory variant's counts, metrics on the changed anchors and the pools' reach."""
    from ..core.evaluation.changes import change_sentence

    fams, md, _ = changes
    for r in fams:
        if r["label"] in rows:
            same = "" if r["answers_max"] else (", so its row is its twin's" if table == "Table 2" else ", so its book is its twin's")
            console.print(change_sentence(r) + same, markup=False, highlight=False)
    if fams and table == "Table 2":
        console.print(
            "[bold]What the memory changed[/bold] (test split; each memory variant against its no-memory twin; "
            "Table 2's metrics on the changed anchors, memory / twin; the anchors: finrag explain --changed)"
        )
        console.print(md, markup=False, highlight=False)


def print_summary(s, start: dt.date, end: dt.date) -> None:
    """One line per lake table: rows and partitions in the decision window, plus a fact or two."""
    from ..core.tables import open_lake

    lake = open_lake(s)
    con = lake.duckdb()
    t = Table(title=f"lake summary {start} .. {end}")
    for col in ("table", "rows", "partitions", "notes"):
        t.add_column(col)
    notes_sql = {
        "news_raw": "SELECT string_agg(time_precision || '=' || n, ', ') FROM (SELECT time_precision, count(*) n FROM news_raw WHERE date BETWEEN $s AND $e GROUP BY 1 ORDER BY 1)",
        "evidence": "SELECT string_agg(source_family || '=' || n, ', ') FROM (SELECT source_family, count(*) n FROM evidence WHERE date BETWEEN $s AND $e GROUP BY 1 ORDER BY 1)",
        "anchors": "SELECT string_agg(event_type || '=' || n, ', ') FROM (SELECT event_type, count(*) n FROM anchors WHERE date BETWEEN $s AND $e GROUP BY 1 ORDER BY 1)",
        "quarantine": "SELECT string_agg(source_table || '=' || n, ', ') FROM (SELECT source_table, sum(rows) n FROM quarantine GROUP BY 1 ORDER BY 1)",
    }
    for name, spec in lake.catalog.items():
        if not lake.has_table(name):
            continue
        if "date" in spec.hive:
            rows, parts = con.execute(
                f'SELECT count(*), count(DISTINCT date) FROM "{name}" WHERE date BETWEEN $s AND $e', {"s": start, "e": end}
            ).fetchone()
        else:
            rows, parts = con.execute(f'SELECT count(*), 1 FROM "{name}"').fetchone()
        note = ""
        if name in notes_sql:
            note = con.execute(notes_sql[name], {"s": start, "e": end} if "$s" in notes_sql[name] else {}).fetchone()[0] or ""
        t.add_row(name, f"{rows:,}", f"{parts:,}", note)
    console.print(t)


@app.command()
def report(
    config: Annotated[Optional[Path], typer.Option(help="settings TOML")] = None,
    lake: Annotated[Optional[str], typer.Option(help="lake folder, or an object-store URI (s3://bucket/prefix)")] = None,
):
    """Compute Tables 2-4 from the lake and write the self-contained HTML report."""
    from ..core.calendar import nyse
    from ..core.evaluation.report import write_report
    from ..core.evaluation.tables import run_evaluation
    from ..core.tables import open_lake

    s = _settings(config, lake)
    _lake_to_read(s)
    lk = open_lake(s)
    run_evaluation(s, lk, nyse())
    path = write_report(s, lk)
    print_evaluation(s)
    console.print(f"report written to {path}")


@app.command()
def summary(
    start: Annotated[str, typer.Option(help="first day")] = "1900-01-01",
    end: Annotated[str, typer.Option(help="last day")] = "2100-01-01",
    config: Annotated[Optional[Path], typer.Option(help="settings TOML")] = None,
    lake: Annotated[Optional[str], typer.Option(help="lake folder, or an object-store URI (s3://bucket/prefix)")] = None,
):
    """Rows and partitions per lake table."""
    s = _settings(config, lake)
    _lake_to_read(s)
    print_summary(s, day(start, "--start"), day(end, "--end"))


@app.command()
def search(
    query: Annotated[str, typer.Argument(help='e.g. "NVDA gross margin Q3 2021"')],
    as_of: Annotated[
        Optional[str], typer.Option("--as-of", help="only documents public before this time (YYYY-MM-DD = end of that New York day); default: now")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="results to show")] = 10,
    budget: Annotated[int, typer.Option("--budget", help="context token budget")] = 5000,
    mode: Annotated[str, typer.Option(help="full | hybrid | bm25 | dense")] = "full",
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
    show_context: Annotated[bool, typer.Option("--context/--no-context", help="print the assembled context")] = True,
    config: Annotated[Optional[Path], typer.Option(help="settings TOML")] = None,
    lake: Annotated[Optional[str], typer.Option(help="lake folder, or an object-store URI (s3://bucket/prefix)")] = None,
):
    """Hybrid financial retrieval (seed 001) over the evidence public before --as-of."""
    import json

    from ..core.retrieval.engine import SearchEngine
    from ..core.tables import open_lake

    s = _settings(config, lake)
    _lake_to_read(s)
    engine = SearchEngine(open_lake(s), as_of)
    res = engine.search(query, k=k, budget=budget, mode=mode)
    if as_json:
        print(json.dumps(res.to_dict(), indent=2, default=str))
        return
    q = res.query
    console.print(f"[bold]{query}[/bold]  (as of {res.as_of}, {len(engine.index.pid):,} passages visible)")
    console.print(
        f"tickers={q.tickers} metrics={q.metrics} periods={q.periods} forms={q.form_types} "
        f"type={q.query_type} comparison={q.is_comparison} latest={q.latest}"
    )
    for note in q.notes:  # how each named company's fiscal period was read
        console.print(f"period: {note}", markup=False, highlight=False)
    t = Table()
    for col in ("#", "score", "ticker", "source", "period", "public (NY)", "title"):
        t.add_column(col)
    for i, h in enumerate(res.hits, 1):
        src = h.form_type + (f" {h.item}" if h.item else "") if h.form_type else "news"
        t.add_row(str(i), f"{h.score:.4f}", h.ticker, src, h.fiscal_period or "", _ny_date(h.public_time), h.title[:70])
    console.print(t)
    if show_context:
        console.print(f"[bold]context[/bold] ({res.context_tokens} of {budget} tokens, {len(res.citations)} citations)")
        console.print(res.context, markup=False, highlight=False)


def _ny_date(public_time: str) -> str:
    """The New York date of a UTC time: a date-only item (stamped at the end of its New York day,
    04:59:59 or 03:59:59 UTC the next morning) shows the date its source gave."""
    import pandas as pd

    return pd.Timestamp(public_time).tz_convert("America/New_York").date().isoformat()


@app.command()
def status(
    config: Annotated[Optional[Path], typer.Option(help="settings TOML")] = None,
    lake: Annotated[Optional[str], typer.Option(help="lake folder, or an object-store URI (s3://bucket/prefix)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
):
    """Where the daily loop stands: last market day, last decision day per stage, pending horizons, sensors, quarantined and flagged input rows."""
    import json

    from ..core.status import lake_status
    from ..core.tables import open_lake

    s = _settings(config, lake)
    killed = killed_runs()
    try:
        _lake_to_read(s)
    except LakeMissing:  # a run killed before it wrote a table still says so
        _print_interrupted({"killed_runs": killed, "interrupted_writes": [], "damaged": []})
        raise
    st = lake_status(open_lake(s), s.market_ticker, s.variants.families).to_dict()
    st["sensors"] = instigators()
    st["killed_runs"] = killed
    if as_json:
        print(json.dumps(st, indent=2, default=str))
        return
    console.print(f"[bold]lake[/bold] {st['lake']}")
    _print_interrupted(st)
    console.print(f"last market day seen (close of {s.market_ticker} in prices): [bold]{st['last_market_day']}[/bold]")
    t = Table(title="last decision day materialised")
    t.add_column("stage")
    t.add_column("last day")
    for k, v in st["last_decision_day"].items():
        t.add_row(k, v or "-")
    console.print(t)
    t = Table(title=f"horizons pending (next maturity {st['next_maturity'] or '-'})")
    for c in ("horizon", "decision days", "first day", "last day", "matures from", "matures until"):
        t.add_column(c)
    for p in st["pending"]:
        t.add_row(p["horizon"], str(p["decision_days"]), p["first_day"], p["last_day"], p["first_maturity"], p["last_maturity"])
    console.print(t)
    t = Table(title="schedules and sensors (this Dagster instance)")
    for c in ("name", "kind", "status", "cursor"):
        t.add_column(c)
    for i in st["sensors"]:
        t.add_row(i["name"], i["kind"], i["status"], (i["cursor"] or "")[:40])
    console.print(t if st["sensors"] else "schedules and sensors: none started in this Dagster instance yet (make dev, then turn them on)")
    t = Table(title="input rows quarantined (rejected) and flagged (kept, for review), as of each source's last write")
    for c in ("source", "written (UTC)", "quarantined", "most common reason", "flagged", "most common flag"):
        t.add_column(c)
    for q in st["quarantine"]:
        when = q["written_at"][:16].replace("T", " ")
        t.add_row(q["source_table"], when, f"{q['rows']:,}", q["top_reason"][:60], f"{q['flagged']:,}", q["top_flag"][:40])
    console.print(t)


def _print_interrupted(st: dict) -> None:
    """What `finrag status` says first when a run was killed or a lake file is damaged."""
    from rich.markup import escape

    for r in st["killed_runs"]:
        console.print(
            f"[bold red]run killed[/bold red]: run {r['run_id'][:8]} is {r['status']} but its finrag process (pid {r['pid']}) is gone: "
            "it was killed before it finished. Partitions it did not reach keep their previous version (or are missing); "
            "run the range again (the next `finrag demo` also marks the run FAILED)."
        )
    tmp = st["interrupted_writes"]
    if tmp:
        console.print(
            f"[bold red]unfinished writes[/bold red]: {len(tmp)} temporary file(s) beside lake partitions, e.g. {escape(tmp[0])}: a write that "
            "never finished, so a run was killed mid-write (unless one is writing now). Each partition keeps its previous "
            "version; run the range again, then delete the .tmp-* files."
        )
    for d in st["damaged"][:10]:
        console.print(f"[bold red]{escape(d['message'])}[/bold red]")
    if len(st["damaged"]) > 10:
        console.print(f"... and {len(st['damaged']) - 10} more damaged lake files (finrag status --json lists them all)")


def killed_runs() -> list[dict]:
    """Runs of the Dagster instance still NOT_STARTED, STARTING or STARTED whose finrag process on this
    host is gone: killed before they finished (what `finrag demo` marks FAILED next time). Read only."""
    home = instance_home()
    if home is None:
        return []
    import socket

    import dagster as dg

    from ..pipeline import HOST_TAG, PID_TAG, _alive

    statuses = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
    out = []
    with dg.DagsterInstance.from_config(str(home)) as inst:
        for run in inst.get_runs(dg.RunsFilter(statuses=statuses)):
            pid, host = run.tags.get(PID_TAG), run.tags.get(HOST_TAG)
            if pid is None or host != socket.gethostname() or _alive(int(pid)):
                continue
            out.append({"run_id": run.run_id, "status": run.status.value, "pid": int(pid)})
    return out


def instance_home() -> Path | None:
    """The Dagster instance folder a read-only command opens ($DAGSTER_HOME, else ./.dagster_home), or
    None without a dagster.yaml there; $DAGSTER_HOME is set to it, since the shipped dagster.yaml names
    its storage folder by that variable."""
    home = Path(os.environ.get("DAGSTER_HOME") or ".dagster_home")
    if not (home / "dagster.yaml").exists():
        return None
    os.environ.setdefault("DAGSTER_HOME", str(home.resolve()))
    return home.resolve()


def instigators() -> list[dict]:
    """Schedules and sensors recorded in the Dagster instance ($DAGSTER_HOME or ./.dagster_home), with their cursors."""
    home = instance_home()
    if home is None:
        return []
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as inst:
        out = []
        for state in inst.all_instigator_state():
            data = state.instigator_data
            out.append(
                {
                    "name": state.instigator_name,
                    "kind": state.instigator_type.value.lower(),
                    "status": state.status.value.lower(),
                    "cursor": getattr(data, "cursor", None) if data is not None else None,
                }
            )
        return sorted(out, key=lambda x: (x["kind"], x["name"]))


@app.command()
def dev(
    host: Annotated[str, typer.Option(help="address the UI listens on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port of the UI")] = 3000,
    config: Annotated[Optional[Path], typer.Option(help="settings TOML (default: $FINRAG_CONFIG or built-in)")] = None,
    grace: Annotated[float, typer.Option(help="seconds Dagster gets to stop cleanly after Ctrl-C or SIGTERM before it is killed")] = 10.0,
):
    """The Dagster UI (webserver and daemon: schedules, sensors, backfills) over the settings' lake and instance.

    Stops on Ctrl-C or SIGTERM within a few seconds: the signal is passed to every Dagster process
    as an interrupt, and whatever is still running after --grace seconds is killed.
    """
    import signal
    import subprocess
    import sys

    if config:
        os.environ["FINRAG_CONFIG"] = str(config.resolve())
    home = ensure_dagster_home()
    ws = home / "workspace.yaml"  # the same code location name as the repository's workspace.yaml, from any folder
    ws.write_text("load_from:\n  - python_module:\n      module_name: finrag_dagster.definitions\n      location_name: finrag\n")
    cmd = [sys.executable, "-m", "dagster", "dev", "-h", host, "-p", str(port), "-w", str(ws)]
    proc = subprocess.Popen(cmd, start_new_session=True)  # its own process group, so no child is left behind
    stop = {"at": None}

    def _forward(signum, _frame):
        if stop["at"] is None:
            stop["at"] = time.monotonic()
            console.print(f"[yellow]stopping Dagster (signal {signum})...[/yellow]")
            try:
                os.killpg(proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGINT, _forward)
    signal.signal(signal.SIGTERM, _forward)
    while True:
        try:
            rc = proc.wait(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            if stop["at"] is not None and time.monotonic() - stop["at"] > grace:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
                break
    try:  # the code servers of the group, if any outlived dagster dev
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    raise typer.Exit(0 if stop["at"] is not None else rc)


lora_app = typer.Typer(no_args_is_help=True, help="The supervised LoRA reader (seed 000's LoRA rows; docs/gpu.md).")


@lora_app.command("train")
def lora_train(
    seed: Annotated[Optional[list[int]], typer.Option("--seed", help="train this seed (repeatable); default: settings.lora.seeds")] = None,
    max_steps: Annotated[Optional[int], typer.Option(help="cap the optimiser steps (a smoke run); default: settings.lora.max_steps")] = None,
    config: Annotated[Optional[Path], typer.Option(help="settings TOML")] = None,
    lake: Annotated[Optional[str], typer.Option(help="lake folder, or an object-store URI (s3://bucket/prefix)")] = None,
):
    """Train LoRA adapters on the train split's matured labels; write them to <lake>/lora_adapters/."""
    from ..core.calendar import nyse
    from ..core.lora_train import train_adapters
    from ..core.tables import open_lake

    s = _settings(config, lake)
    if max_steps is not None:
        s = s.with_overrides(lora={"max_steps": max_steps})
    for m in train_adapters(s, open_lake(s), nyse(), seed or None, log=console.print):
        console.print(f"{m['adapter_id']}: seed {m['seed']}, {m['steps']} steps, validation macro-F1 {m['validation'].get('mean')}")


from .explain import explain  # noqa: E402
from .fetch import fetch_app  # noqa: E402
from .replay import replay  # noqa: E402

app.command("replay")(replay)
app.command("explain")(explain)
app.add_typer(fetch_app, name="fetch")
app.add_typer(lora_app, name="lora")


if __name__ == "__main__":  # pragma: no cover
    main()
