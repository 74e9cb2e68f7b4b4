"""``finrag_dagster/dbt_like_sql/``: set-based transformations as SQL files run by DuckDB over the lake.

A model is one ``.sql`` file whose header comments declare it (name, stage, partitioning, sort key,
description, columns); its upstream tables are read from the SQL itself with sqlglot, never listed
by hand. The models ship inside the package (package data, found with :mod:`importlib.resources`),
so an installed ``finrag`` builds the same assets as a checkout. The header format, the built-in
relations and how daily models are run: docs/layout.md, "`core/storage/sqlmodels.py`: design notes".
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa
import sqlglot
from sqlglot import exp

from .schemas import TableSpec

if TYPE_CHECKING:
    from ..calendar import TradingCalendar
    from .lake import Lake

BUILTINS = {"trading_sessions", "splits"}
SQL_DIR = Path(str(resources.files("finrag_dagster") / "dbt_like_sql"))  # the package's models
_TYPES = {
    "VARCHAR": pa.string(),
    "TEXT": pa.string(),
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float32(),
    "BIGINT": pa.int64(),
    "INTEGER": pa.int32(),
    "BOOLEAN": pa.bool_(),
    "DATE": pa.date32(),
    "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
}
_HEADER = re.compile(r"^--\s*(\w+)\s*:\s*(.*)$")


class SqlModelError(ValueError):
    pass


@dataclass(frozen=True)
class SqlModel:
    name: str
    path: Path
    sql: str
    partitioned: str  # "daily" | "none"
    upstream: tuple[str, ...]
    spec: TableSpec
    description: str
    stage: str = ""  # the pipeline stage that runs it (its `-- stage:` header)


def _parse_columns(text: str, model: str) -> pa.Schema:
    fields = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        m = re.match(r"^(\w+)\s+(\w+)(\s+NOT\s+NULL)?$", part, re.I)
        if not m or m.group(2).upper() not in _TYPES:
            raise SqlModelError(f"{model}: cannot read column declaration {part!r}")
        fields.append(pa.field(m.group(1), _TYPES[m.group(2).upper()], nullable=not m.group(3)))
    return pa.schema(fields)


def upstream_tables(sql: str) -> tuple[str, ...]:
    """Tables a query reads (CTE names and built-ins excluded), from its parse tree."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    names = {t.name for t in tree.find_all(exp.Table)} - ctes - BUILTINS
    return tuple(sorted(names))


def load_model(path: Path) -> SqlModel:
    text = path.read_text()
    header: dict[str, str] = {}
    for line in text.splitlines():
        m = _HEADER.match(line.strip())
        if not m:
            if line.strip() and not line.strip().startswith("--"):
                break
            continue
        header[m.group(1).lower()] = m.group(2).strip()
    name = header.get("name", path.stem)
    if name != path.stem:
        raise SqlModelError(f"{path}: model name {name!r} must equal the file name")
    if "columns" not in header:
        raise SqlModelError(f"{path}: missing '-- columns:' header")
    partitioned = header.get("partitioned", "none")
    if partitioned not in ("daily", "none"):
        raise SqlModelError(f"{path}: partitioned must be daily or none")
    schema = _parse_columns(header["columns"], name)
    spec = TableSpec(
        name,
        schema,
        ("date",) if partitioned == "daily" else (),
        tuple(c.strip() for c in header.get("sort_by", "").split(",") if c.strip()),
        header.get("description", ""),
        decision_time=header.get("decision_time", "false").lower() == "true",
    )
    if not header.get("stage"):
        raise SqlModelError(f"{path}: missing '-- stage:' header (the pipeline stage that runs it)")
    return SqlModel(name, path, text, partitioned, upstream_tables(text), spec, spec.description, header["stage"])


def load_models(folder: str | Path = SQL_DIR) -> list[SqlModel]:
    """Every ``*.sql`` model of ``folder`` (default: the package's), by file name."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"SQL models folder {folder} not found")
    return [load_model(p) for p in sorted(folder.glob("*.sql"))]


def sessions_frame(cal: TradingCalendar) -> pa.Table:
    return pa.table({"date": pa.array(cal.sessions.astype("datetime64[D]")), "session_idx": pa.array(range(len(cal.sessions)), pa.int64())})


def splits_frame(splits: list[tuple[str, dt.date, dt.date]]) -> pa.Table:
    return pa.table(
        {
            "split": pa.array([s[0] for s in splits], pa.string()),
            "split_order": pa.array(list(range(len(splits))), pa.int64()),
            "first_day": pa.array([s[1] for s in splits], pa.date32()),
            "last_day": pa.array([s[2] for s in splits], pa.date32()),
        }
    )


def run_model(
    model: SqlModel, lake: Lake, cal: TradingCalendar, days: list[dt.date] | None = None, splits: list[tuple[str, dt.date, dt.date]] | None = None
) -> dict[str, int]:
    """Execute a model over the lake and write its partitions (all of ``days`` for daily ones)."""
    import duckdb

    try:
        con = lake.duckdb(tables=[t for t in model.upstream])
        try:
            return _execute(model, lake, con, cal, days, splits)
        finally:
            con.close()
    except duckdb.Error as e:  # DuckDB names a damaged input file but not what to do: the lake says both
        damaged = lake.damaged_files(model.upstream)
        if damaged:
            _, path, why = damaged[0]
            raise lake.damaged(path, why=why) from e
        raise


def _execute(model: SqlModel, lake: Lake, con, cal: TradingCalendar, days, splits) -> dict[str, int]:
    """:func:`run_model`'s body on an open DuckDB connection over the model's upstream tables."""
    con.register("trading_sessions", sessions_frame(cal))
    con.register("splits", splits_frame(splits or []))
    if model.partitioned == "daily":
        if not days:
            raise SqlModelError(f"{model.name}: a daily model needs the partition days to compute")
        df = pl.from_arrow(con.sql(model.sql, params={"start": min(days), "end": max(days)}).to_arrow_table())
        if "date" not in df.columns:
            raise SqlModelError(f"{model.name}: a daily model must return a date column")
        df = df.with_columns(pl.col("date").cast(pl.Date))
        wanted = set(days)
        df = df.filter(pl.col("date").is_in(sorted(wanted)))
        return lake.write_partitions(model.name, df, sorted(wanted))
    _, n = lake.write(model.name, con.sql(model.sql).to_arrow_table())
    return {"all": n}
