"""The parquet lake: hive layout, schema checked on write, atomic and byte-reproducible.

Layout: ``<root>/<table>/<k1>=<v1>/.../part-0.parquet`` with the table's hive keys from its
spec in the lake's catalog (finrag's: :mod:`finrag_dagster.core.tables`). A write goes to a temporary file in the same folder, is
fsynced and then ``os.replace``d over the old file, so a crash leaves the previous version of
a partition, never a torn one. Rows are sorted by the table's sort keys and written with fixed
writer options and no pandas metadata, so the same rows always give the same bytes.

The tables may live on object storage instead (``Lake("s3://bucket/prefix")``, any URI that
``pyarrow.fs.FileSystem.from_uri`` opens): the same layout and bytes, each partition one object.
An object store has no rename, but it never shows a half-written object either: a partition's
bytes are built in memory and sent as one upload (a single PUT, or a multipart upload that the
store publishes only on completion), so a crash mid-write leaves the previous object. The lake's
local working files (staging, retrieval caches, the lock) then live in ``work``, a local folder.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import hashlib
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..errors import MissingInput, StepError
from .atomic import atomic_file
from .lake_location import default_work_dir, is_remote
from .schemas import TableSpec

PART = "part-0.parquet"
TMP_PREFIX = ".tmp-"  # a partition's bytes before os.replace: left behind only by a write that never finished
MAGIC = b"PAR1"  # a parquet file starts and ends with it
# get_dagster_logger("finrag.lake")'s name, without importing Dagster here: a step's log shows it
LOG = logging.getLogger("dagster.builtin.finrag.lake")
_WRITE_OPTS = dict(compression="zstd", compression_level=3, use_dictionary=True, write_statistics=True)


class SchemaError(ValueError):
    """Rows handed to the lake do not match the table's declared schema."""


class DamagedLakeFile(StepError):
    """A lake file that is not a whole parquet file (cut short by a copy or a full disk, overwritten):
    its partition must be materialised again."""


def damaged_message(url: str, rel: tuple[str, ...], why: str) -> str:
    """What a person reads about a damaged partition file: which, why, and what to do. ``rel``: its
    path's parts under the lake root (table, hive keys, file name)."""
    table, keys = rel[0], [k for k in rel[1:-1] if "=" in k]
    where = f"partition {', '.join(keys)} of table {table}" if keys else f"table {table}"
    day = next((k.split("=", 1)[1] for k in keys if k.startswith("date=")), None)
    how = f" (`dg launch --assets <asset> --partition {day}`, or `finrag demo --start {day} --end {day}`)" if day else ""
    return (
        f"damaged lake file {url}: {why}. Re-materialise the {where}: run the asset that writes it again{how}; the new file replaces the damaged one"
    )


def _key_str(v) -> str:
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()[:10]
    return str(v)


def conform(spec: TableSpec, data: pl.DataFrame | pa.Table) -> pa.Table:
    """Cast rows to the declared schema; missing/extra columns or nulls in required ones fail.
    A column of ``spec.optional`` that the rows do not have is left out of the file."""
    table = data.to_arrow() if isinstance(data, pl.DataFrame) else data
    have = set(table.column_names)
    want = spec.schema
    if spec.optional and not set(spec.optional) <= have:
        want = pa.schema([f for f in want if f.name in have or f.name not in spec.optional])
    missing = [f.name for f in want if f.name not in have]
    extra = sorted(have - set(want.names) - set(spec.hive))
    if missing or extra:
        raise SchemaError(f"{spec.name}: missing columns {missing}, unexpected columns {extra}")
    cols = []
    for f in want:
        col = table.column(f.name)
        try:
            col = col.cast(f.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaError(f"{spec.name}.{f.name}: cannot cast {col.type} to {f.type}: {e}") from e
        if not f.nullable and col.null_count:
            raise SchemaError(f"{spec.name}.{f.name}: {col.null_count} null value(s) in a required column")
        cols.append(col)
    out = pa.Table.from_arrays(cols, schema=want)
    if spec.sort_by and out.num_rows > 1:
        out = out.sort_by([(k, "ascending") for k in spec.sort_by])
    return out.combine_chunks()


def _serialize(table: pa.Table) -> bytes:
    buf = pa.BufferOutputStream()
    pq.write_table(table, buf, **_WRITE_OPTS)
    return buf.getvalue().to_pybytes()


def _atomic_write(table: pa.Table, path: Path, keep_same: bool = False) -> bool:
    """Write ``table`` to ``path`` atomically; with ``keep_same``, a file that already holds exactly
    these bytes is left untouched. Returns whether the file was (re)written."""
    if keep_same and path.exists():
        buf = pa.BufferOutputStream()
        pq.write_table(table, buf, **_WRITE_OPTS)
        data = buf.getvalue().to_pybytes()
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
        with atomic_file(path, prefix=TMP_PREFIX, suffix=".parquet") as fh:
            fh.write(data)
        return True
    with atomic_file(path, prefix=TMP_PREFIX, suffix=".parquet") as fh:
        pq.write_table(table, fh, **_WRITE_OPTS)
    return True


_FILE_COL = "__finrag_source_file"


class Lake:
    """A folder of parquet tables. All paths are derived from the table's declared spec, looked
    up in the ``catalog`` it is given (finrag's tables: :class:`finrag_dagster.core.tables.Lake`)."""

    def __init__(self, root: str | os.PathLike, catalog: Mapping[str, TableSpec], *, work: str | os.PathLike | None = None):
        self.remote = is_remote(root)
        if self.remote:
            self.uri = str(root).rstrip("/")
            try:
                self.fs, base = pafs.FileSystem.from_uri(self.uri)
            except (pa.ArrowInvalid, OSError) as e:
                raise ValueError(f"cannot open the lake {self.uri!r}: {e}") from e
            self.root: Path | PurePosixPath = PurePosixPath(base.rstrip("/"))
            self.work = Path(work).resolve() if work else default_work_dir(self.uri)
        else:
            self.fs = None
            self.root = Path(root).resolve()
            self.uri = str(self.root)
            self.work = Path(work).resolve() if work else self.root
        self._catalog = catalog
        self.unchanged: set[Path | PurePosixPath] = set()  # partitions a keep_same write found already up to date
        self.replaced_damaged: list[str] = []  # damaged partition files a write replaced (also logged)

    @property
    def catalog(self) -> Mapping[str, TableSpec]:
        return self._catalog

    # ------------------------------------------------------------------ paths
    def spec(self, table: str) -> TableSpec:
        try:
            return self.catalog[table]
        except KeyError:
            raise KeyError(f"unknown lake table {table!r}; declared: {sorted(self.catalog)}") from None

    def path(self, table: str, **keys) -> Path | PurePosixPath:
        spec = self.spec(table)
        if set(keys) != set(spec.hive):
            raise ValueError(f"{table}: expected keys {spec.hive}, got {sorted(keys)}")
        p = self.root / table
        for k in spec.hive:
            p = p / f"{k}={_key_str(keys[k])}"
        return p / PART

    def exists(self, table: str, **keys) -> bool:
        return self.is_file(self.path(table, **keys))

    def location(self, table: str | None = None) -> str:
        """Where a table (or the whole lake) is, as a user would type it: a folder or a URI."""
        if not self.remote:
            return str(self.root / table) if table else str(self.root)
        return f"{self.uri.split('?', 1)[0]}/{table}" if table else self.uri.split("?", 1)[0]

    def url(self, path) -> str:
        """A partition file as a user would open it: a local path, or ``s3://bucket/key``."""
        return str(path) if not self.remote else f"{self.uri.split('://', 1)[0]}://{path}"

    # ------------------------------------------------------------ files (local or remote)
    def is_file(self, path) -> bool:
        if not self.remote:
            return Path(path).is_file()
        return self.fs.get_file_info(str(path)).type == pafs.FileType.File

    def has_table(self, table: str) -> bool:
        """Whether the table has a folder (prefix) in the lake, i.e. anything was ever written to it."""
        if not self.remote:
            return (self.root / table).exists()
        sel = pafs.FileSelector(str(self.root / table), recursive=True, allow_not_found=True)
        return any(i.type == pafs.FileType.File for i in self.fs.get_file_info(sel))

    def read_bytes(self, path) -> bytes:
        if not self.remote:
            return Path(path).read_bytes()
        with self.fs.open_input_stream(str(path)) as fh:
            return fh.read()

    def file_size(self, path) -> int:
        if not self.remote:
            return Path(path).stat().st_size
        return self.fs.get_file_info(str(path)).size

    def file_stamp(self, path) -> tuple[int, int]:
        """(size, modification time in ns) of a partition file: a cheap change fingerprint."""
        if not self.remote:
            st = Path(path).stat()
            return st.st_size, st.st_mtime_ns
        info = self.fs.get_file_info(str(path))
        return info.size, info.mtime_ns or 0

    def read_parquet(self, path, columns: list[str] | None = None) -> pa.Table:
        """A partition file; :class:`DamagedLakeFile` (naming it and what to do) when it is not a readable parquet."""
        try:
            return pq.read_table(str(path), columns=columns, filesystem=self.fs)
        except (FileNotFoundError, PermissionError):
            raise
        except (pa.ArrowException, OSError) as e:
            raise self.damaged(path, e) from e

    def num_rows(self, path) -> int:
        """The rows of one partition file, from its footer (nothing else is read)."""
        if not self.remote:
            return pq.read_metadata(path).num_rows
        with self.fs.open_input_file(str(path)) as fh:
            return pq.read_metadata(fh).num_rows

    def read_schema(self, path) -> pa.Schema:
        try:
            if not self.remote:
                return pq.read_schema(path)
            with self.fs.open_input_file(str(path)) as fh:
                return pq.read_schema(fh)
        except (FileNotFoundError, PermissionError):
            raise
        except (pa.ArrowException, OSError) as e:
            raise self.damaged(path, e) from e

    def file_problem(self, path) -> str | None:
        """Why a partition file is not a whole parquet file, or None. Cheap: its size and its first and
        last four bytes (a parquet starts and ends with ``PAR1``; a file cut short has lost its end)."""
        try:
            size = self.file_size(path)
            if size < 2 * len(MAGIC):
                return f"{size} bytes, too short for a parquet file"
            if self.remote:
                with self.fs.open_input_file(str(path)) as fh:
                    head, tail = fh.read_at(4, 0), fh.read_at(4, size - 4)
            else:
                with open(path, "rb") as fh:
                    head = fh.read(4)
                    fh.seek(size - 4)
                    tail = fh.read(4)
        except FileNotFoundError:
            return None
        if head != MAGIC:
            return "it does not start as a parquet file does (overwritten?)"
        if tail != MAGIC:
            return f"its end is missing ({size:,} bytes, cut short by a copy, a full disk or a killed writer)"
        return None

    def damaged(self, path, error: BaseException | None = None, why: str | None = None) -> DamagedLakeFile:
        """The error for a partition file that cannot be read: its file, why, and what to do."""
        why = why or self.file_problem(path) or (str(error).splitlines()[0] if error is not None else "not a readable parquet file")
        rel = PurePosixPath(str(path)).relative_to(PurePosixPath(str(self.root))).parts
        return DamagedLakeFile(damaged_message(self.url(path), rel, why))

    def damaged_files(self, tables: Iterable[str] | None = None) -> list[tuple[str, Path | PurePosixPath, str]]:
        """(table, file, why) of every partition file of ``tables`` (default: every declared table) that
        is not a whole parquet file (:meth:`file_problem`)."""
        out = []
        for t in self.catalog if tables is None else tables:
            if t in self.catalog and self.has_table(t):
                out += [(t, f, why) for f in self.partition_files(t) if (why := self.file_problem(f))]
        return out

    def leftover_temp_files(self) -> list[str]:
        """Temporary files of partition writes (``.tmp-*`` beside a partition) under the declared tables'
        folders: a write that never reached its ``os.replace``, i.e. a process killed mid-write (or one
        writing right now). The partition still holds its previous version; the file can be deleted."""
        if self.remote:
            return []  # an object store publishes an object whole: nothing is left behind
        out: list[str] = []
        for t in self.catalog:
            base = self.root / t
            if base.is_dir():
                out += sorted(str(f) for f in base.rglob(f"{TMP_PREFIX}*") if f.is_file())
        return out

    def delete(self, path) -> None:
        """Remove one partition file (it must be one of this lake's)."""
        if not self.remote:
            Path(path).unlink()
        else:
            self.fs.delete_file(str(path))

    def _write_object(self, table: pa.Table, path: PurePosixPath, keep_same: bool) -> bool:
        """One partition as one object: built in memory, then a single upload (see the module docstring)."""
        data = _serialize(table)
        if keep_same:
            info = self.fs.get_file_info(str(path))
            if info.type == pafs.FileType.File and info.size == len(data) and self.read_bytes(path) == data:
                return False
        with self.fs.open_output_stream(str(path), metadata={}) as out:
            out.write(data)
        return True

    # ------------------------------------------------------------------ writes
    def write(self, table: str, data: pl.DataFrame | pa.Table, *, keep_same: bool = False, **keys) -> tuple[Path, int]:
        """Write one partition atomically (the whole partition is replaced). ``keep_same``: leave
        a partition that already holds exactly these bytes untouched (see :attr:`unchanged`)."""
        spec = self.spec(table)
        t = conform(spec, data)
        path = self.path(table, **keys)
        damaged = None if self.remote else self.file_problem(path)  # an object store never shows a partial object
        written = self._write_object(t, path, keep_same) if self.remote else _atomic_write(t, path, keep_same)
        if not written:
            self.unchanged.add(path)
        elif damaged:
            self.replaced_damaged.append(self.url(path))
            LOG.warning("replaced a damaged lake file %s (%s) with a newly written one", self.url(path), damaged)
        return path, t.num_rows

    def write_partitions(
        self,
        table: str,
        data: pl.DataFrame,
        partitions: Iterable,
        key: str = "date",
        keep_same: bool = False,
        **fixed_keys,
    ) -> dict[str, int]:
        """Split ``data`` on column ``key`` and write every listed partition, empty ones too."""
        counts: dict[str, int] = {}
        if key not in data.columns:
            raise SchemaError(f"{table}: partition column {key!r} missing")
        groups = {(_key_str(k[0]) if isinstance(k, tuple) else _key_str(k)): g for k, g in data.group_by(key, maintain_order=True)}
        wanted = [_key_str(p) for p in partitions]
        stray = sorted(set(groups) - set(wanted))
        if stray:
            raise ValueError(f"{table}: rows for partitions outside the requested set: {stray[:5]}")
        empty = data.head(0)
        for p in wanted:
            g = groups.get(p, empty).drop(key)
            _, n = self.write(table, g, keep_same=keep_same, **{key: p}, **fixed_keys)
            counts[p] = n
        return counts

    # ------------------------------------------------------------------ reads
    def partition_files(self, table: str, **keys_filter) -> list[Path | PurePosixPath]:
        spec = self.spec(table)
        base = self.root / table
        pattern = "/".join(f"{k}={_key_str(keys_filter[k])}" if k in keys_filter else f"{k}=*" for k in spec.hive)
        if self.remote:
            return self._remote_glob(base, [*pattern.split("/"), PART] if pattern else [PART])
        if not base.exists():
            return []
        return sorted(base.glob(f"{pattern}/{PART}" if pattern else PART))

    def _remote_glob(self, base: PurePosixPath, parts: list[str]) -> list[PurePosixPath]:
        """The objects under ``base`` whose relative path matches ``parts`` (fnmatch per level)."""
        if not any("*" in p for p in parts):
            p = base.joinpath(*parts)
            return [p] if self.is_file(p) else []
        fixed = next(i for i, p in enumerate(parts) if "*" in p)  # list only under the fixed leading keys
        sel = pafs.FileSelector(str(base.joinpath(*parts[:fixed])), recursive=True, allow_not_found=True)
        out = []
        for info in self.fs.get_file_info(sel):
            if info.type != pafs.FileType.File:
                continue
            rel = PurePosixPath(info.path).relative_to(base).parts
            if len(rel) == len(parts) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(rel, parts)):
                out.append(PurePosixPath(info.path))
        return sorted(out)

    def read(
        self,
        table: str,
        dates: Iterable | None = None,
        columns: list[str] | None = None,
        **keys,
    ) -> pl.DataFrame:
        """Read partitions of a table as polars (hive keys added as columns; date as pl.Date).

        ``dates`` restricts a daily table to those partitions (missing ones are simply absent);
        other keys (e.g. ``variant=``) filter on the path.
        """
        spec = self.spec(table)
        if dates is not None:
            files = []
            for d in dates:
                files.extend(self.partition_files(table, date=d, **keys))
        else:
            files = self.partition_files(table, **keys)
        fast = self._read_local_files(table, files, columns) if len(files) > 1 and not self.remote else None
        if fast is not None:
            return fast.with_columns(pl.col("date").cast(pl.Utf8).str.to_date()) if "date" in spec.hive else fast
        frames = []
        for f in files:
            t = self.read_parquet(f, columns=columns)
            df = pl.from_arrow(t)
            rel = f.relative_to(self.root / table).parts[:-1]
            for part in rel:
                k, v = part.split("=", 1)
                df = df.with_columns(pl.lit(v).alias(k))
            frames.append(df)
        if not frames:
            empty = pl.from_arrow(spec.schema.empty_table())
            if columns:
                empty = empty.select(columns)
            for k in spec.hive:
                empty = empty.with_columns(pl.lit(None, dtype=pl.Utf8).alias(k))
            frames = [empty]
        out = pl.concat(frames, how="vertical_relaxed")
        if "date" in spec.hive:
            out = out.with_columns(pl.col("date").cast(pl.Utf8).str.to_date())
        return out

    def _read_local_files(self, table: str, files: list, columns: list[str] | None) -> pl.DataFrame | None:
        """Many local partition files in one polars read (a file's hive keys as columns), the same
        frame as reading them one by one (and 10x faster for a thousand daily files: what a cold
        `finrag search` waits for); None when the files' schemas differ, so the caller reads them
        one by one and concatenates with relaxed types."""
        paths = [str(f) for f in files]
        try:
            lf = pl.scan_parquet(paths, hive_partitioning=False, include_file_paths=_FILE_COL)
            df = (lf.select(*columns, _FILE_COL) if columns else lf).collect()
        except (pl.exceptions.SchemaError, pl.exceptions.ComputeError, pl.exceptions.ColumnNotFoundError, OSError):
            return None  # read one by one: a damaged file is then named (read_parquet)
        keys: dict[str, dict[str, str]] = {}
        for f, path in zip(files, paths):
            for part in f.relative_to(self.root / table).parts[:-1]:
                k, v = part.split("=", 1)
                keys.setdefault(k, {})[path] = v
        file_col = pl.col(_FILE_COL)
        return df.with_columns(file_col.replace_strict(m, return_dtype=pl.Utf8).alias(k) for k, m in keys.items()).drop(_FILE_COL)

    def read_range(self, table: str, start, end, columns: list[str] | None = None, **keys) -> pl.DataFrame:
        """Read the daily partitions with start <= date <= end that exist."""
        lo, hi = _key_str(start), _key_str(end)
        files = [f for f in self.partition_files(table, **keys) if lo <= _date_of(f) <= hi]
        return self.read(table, dates=sorted({_date_of(f) for f in files}), columns=columns, **keys)

    def materialized_dates(self, table: str, **keys) -> list[str]:
        return sorted({_date_of(f) for f in self.partition_files(table, **keys)})

    # ------------------------------------------------------------------ SQL
    def duckdb(self, tables: Iterable[str] | None = None) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection with one view per lake table (hive partitioning on)."""
        con = duckdb.connect()
        con.execute("SET TimeZone='UTC'")
        if tables is not None:
            for name in tables:
                self.register_view(con, name)
            return con
        if self.remote:
            listing = self.fs.get_file_info(pafs.FileSelector(str(self.root), allow_not_found=True))
            for name in sorted(PurePosixPath(i.path).name for i in listing if i.type == pafs.FileType.Directory):
                if name in self.catalog:
                    self.register_view(con, name)
                elif not name.startswith((".", "_")):
                    files = [f for f in self.fs.get_file_info(pafs.FileSelector(str(self.root / name), recursive=True)) if f.path.endswith(PART)]
                    if files:
                        dset = pads.dataset(
                            [f.path for f in files],
                            filesystem=self.fs,
                            format="parquet",
                            partitioning="hive",
                            partition_base_dir=str(self.root / name),
                        )
                        con.register(name, dset)
            return con
        for d in sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))) if self.root.exists() else []:
            if d.name in self.catalog:
                self.register_view(con, d.name)
            else:  # e.g. a SQL model's table: hive keys read off its paths
                first = next(iter(sorted(d.rglob(PART))), None)
                if first is None:
                    continue
                keys = [part.split("=", 1)[0] for part in first.relative_to(d).parts[:-1]]
                glob = str(d / "/".join(f"{k}=*" for k in keys) / PART) if keys else str(d / PART)
                hive = ", hive_partitioning = true" if keys else ""
                con.execute(f"CREATE OR REPLACE VIEW \"{d.name}\" AS SELECT * FROM read_parquet('{glob}'{hive})")
        return con

    def register_view(self, con: duckdb.DuckDBPyConnection, name: str) -> None:
        spec = self.spec(name)
        files = self.partition_files(name)
        if not files:
            # An empty view with the declared columns, so SQL over a fresh lake still binds.
            con.register(f"__empty_{name}", spec.schema.empty_table())
            cols = ", ".join(
                [f'"{f.name}"' for f in spec.schema] + [f'CAST(NULL AS {"DATE" if k == "date" else "VARCHAR"}) AS "{k}"' for k in spec.hive]
            )
            con.execute(f'CREATE OR REPLACE VIEW "{name}" AS SELECT {cols} FROM "__empty_{name}"')
            return
        if self.remote:  # a pyarrow dataset over the objects (DuckDB scans it with projection and filter pushdown)
            part = pads.partitioning(pa.schema([(k, pa.date32() if k == "date" else pa.string()) for k in spec.hive]), flavor="hive")
            dset = pads.dataset(
                [str(f) for f in files], filesystem=self.fs, format="parquet", partitioning=part, partition_base_dir=str(self.root / name)
            )
            con.register(name, dset)
            return
        glob = str(self.root / name / "/".join(f"{k}=*" for k in spec.hive) / PART) if spec.hive else str(self.root / name / PART)
        types = "{" + ", ".join(f"'{k}': {'DATE' if k == 'date' else 'VARCHAR'}" for k in spec.hive) + "}"
        hive = f", hive_partitioning = true, hive_types = {types}" if spec.hive else ""
        con.execute(f"CREATE OR REPLACE VIEW \"{name}\" AS SELECT * FROM read_parquet('{glob}'{hive})")


def require_partitions(lake: Lake, table: str, days: list[str]) -> None:
    """Every partition of ``days`` is in the lake, else :class:`MissingInput` saying which."""
    missing = [d for d in days if not lake.exists(table, date=d)]
    if missing:
        raise MissingInput(
            f"{table} partitions {missing[0]} .. {missing[-1]} ({len(missing)}) are not materialised; "
            f"they are needed as look-back history. Materialise {table} from the start of the range first.",
        )


def rows_on(df: pl.DataFrame, day: str) -> pl.DataFrame:
    """The rows of one ``date`` (as :meth:`Lake.read` adds it), without the date column."""
    return df.filter(pl.col("date") == dt.date.fromisoformat(day)).drop("date")


def _date_of(path: Path) -> str:
    for part in path.parts:
        if part.startswith("date="):
            return part[5:]
    raise ValueError(f"{path} has no date= key")


def file_digest(path: str | os.PathLike, lake: Lake | None = None) -> str:
    data = lake.read_bytes(path) if lake is not None else Path(path).read_bytes()
    return hashlib.sha256(data).hexdigest()


def table_digests(lake: Lake, table: str) -> Mapping[str, str]:
    """sha256 of every partition file of a table, keyed by its relative path."""
    return {str(f.relative_to(lake.root)): file_digest(f, lake) for f in lake.partition_files(table)}
