"""What the Dagster catalog says about every asset: columns, storage, owners and code versions.

Applied to every asset :func:`~finrag_dagster.defs.stages.staged_assets` builds (the UI's
definitions and ``finrag demo`` alike), as definition metadata that needs no run:
``dagster/column_schema``, ``dagster/uri`` and ``lake_table``, the owners :data:`OWNERS`, and a
``code_version`` hashing what determines the asset's bytes (:data:`SETTINGS_OF` less
:data:`NOT_BYTES`). The row count is the one entry that needs a run (defs/reporting.py
``report_partition_rows``). What each entry holds: docs/production.md, "Catalog" and "Code versions".
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path

import dagster as dg

from ..core.settings import Settings
from ..core.storage.sqlmodels import SqlModel
from ..core.tables import package_catalog
from .freshness import freshness_of
from .reporting import table_schema

OWNERS = ("team:finrag",)  # one team owns every asset; the UI filters and groups by it

# Settings sections whose values reach an asset's bytes, by the asset's name (the last part of its
# key). A family's loop outputs and feedback are keyed by their own names below.
SRC = ("world", "sources")  # the source files (or the embedded world) and the market proxy
LOOP = (*SRC, "calendar", "evidence", "retrieval", "memory", "reader", "experience", "splits", "variants", "lora")
SETTINGS_OF: dict[str, tuple[str, ...]] = {
    "synthetic_world": ("world",),
    "universe": SRC,
    "prices": SRC,
    "news_raw": SRC,
    "filings_raw": SRC,
    "evidence": (*SRC, "calendar", "evidence"),
    "anchors": (*SRC, "calendar", "evidence"),
    "context_cards": (*SRC, "cards"),
    "candidates": ("calendar", "retrieval"),
    "labels": (*SRC, "labels"),
    "experience_tree": ("calendar", "evidence", "experience", "reader", "splits"),
    "memory_snapshot": LOOP,
    "contexts": LOOP,
    "reader_outputs": LOOP,
    "feedback": (*SRC, "calendar", "memory", "splits", "variants", "lora"),
    "lora_adapters": ("calendar", "labels", "lora", "reader", "retrieval", "splits"),
    "sensitivity": (*SRC, "calendar", "evidence", "retrieval", "memory", "reader", "experience", "splits"),
    "evaluation": (*SRC, "memory", "splits", "variants", "lora"),
    "experience_task": (*SRC, "calendar", "evidence", "experience", "reader", "splits"),
    "report": ("splits", "variants", "lora"),
}
# every section but where the lake is, when sensors run, what checks demand and where steps run
NOT_BYTE_SECTIONS = ("lake_dir", "lake_uri", "sensors", "checks", "retries", "alerts", "freshness", "execution")
BYTE_SECTIONS = tuple(f for f in Settings.model_fields if f not in NOT_BYTE_SECTIONS)
# fields of a section that change how a step runs (its speed, its patience) but never what it writes
NOT_BYTES: dict[str, frozenset[str]] = {
    "reader": frozenset({"concurrency", "timeout_s", "retries", "backoff_base_s", "backoff_max_s", "api_key_env"}),
}
PACKAGE = "finrag_dagster"
FOLLOWED = (f"{PACKAGE}.core", f"{PACKAGE}.sources")  # the code that decides bytes (defs/ only adapts)
NOT_FOLLOWED = (f"{PACKAGE}.core.tables",)  # the catalog of every table: it imports every stage for its schemas
WRITER = f"{PACKAGE}.core.storage.lake"  # how every table is written (conformed, sorted, encoded): part of every asset's code


def lake_table_of(key: dg.AssetKey) -> str | None:
    """The lake table an asset writes (``source_memory/reader_outputs`` -> ``reader_outputs``), if any."""
    name = key.path[-1]
    return name if name in package_catalog() else None


def catalog_metadata(key: dg.AssetKey, s: Settings) -> dict:
    """The asset's static catalog metadata: its table's columns, where the table is, its name."""
    table = lake_table_of(key)
    if table is None:
        return {}
    spec = package_catalog()[table]
    where = f"{s.lake_uri.split('?', 1)[0]}/{table}" if s.lake_uri else str(Path(s.lake_dir) / table)
    return {
        "dagster/column_schema": dg.MetadataValue.table_schema(table_schema(spec.schema, spec.hive)),
        "dagster/uri": dg.MetadataValue.text(where),
        "lake_table": dg.MetadataValue.text(table),
    }


# ------------------------------------------------------------------ code versions
ROOT = Path(__file__).resolve().parents[1]  # the finrag_dagster package folder


@lru_cache(maxsize=None)
def _module_file(name: str) -> Path | None:
    """The source file of a package module (``None`` for a name that is not one: a function, a class)."""
    parts = name.split(".")[1:]
    for f in (ROOT.joinpath(*parts).with_suffix(".py"), ROOT.joinpath(*parts, "__init__.py")):
        if parts and f.is_file():
            return f
    return None


# An import statement at the start of a line (at any indent: a function's lazy import counts), a
# parenthesised name list spanning lines. Only these lines go to the parser: parsing each module
# whole was most of the cost of building the definitions, which every step process does. A line
# of a docstring that reads as an import can only add a module to the closure (one more source
# that changes the version), never drop one; tests/unit/test_catalog_versions.py holds it equal to
# the whole-module parse on the package.
IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\([^)]*\)|[^\n]*)|import[ \t]+[^\n]*)", re.M)


def _import_nodes(text: str) -> list[ast.stmt]:
    out = []
    for m in IMPORT_LINE.finditer(text):
        try:
            out += ast.parse(m.group(0).strip()).body
        except SyntaxError:  # prose in a docstring that starts like an import
            continue
    return out


def _imports(name: str, path: Path) -> set[str]:
    """The package modules ``name`` (at ``path``) imports, relative imports resolved."""
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in _import_nodes(path.read_text()):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]) if node.level else ""
            src = ".".join(p for p in (base, node.module or "") if p)
            out |= {src} | {f"{src}.{a.name}" for a in node.names if a.name != "*"}
    return {m for m in out if m.startswith(PACKAGE) and _module_file(m) is not None}


@lru_cache(maxsize=None)
def module_closure(name: str) -> frozenset[str]:
    """``name`` and every core/sources module it reaches through imports (the catalog module not followed)."""
    seen, todo = {name, WRITER}, [name, WRITER]
    while todo:
        m = todo.pop()
        if m.startswith(NOT_FOLLOWED) and m != name:
            continue
        for i in _imports(m, _module_file(m)):
            if i not in seen and i.startswith(FOLLOWED):
                seen.add(i)
                todo.append(i)
    return frozenset(seen)


@lru_cache(maxsize=None)
def _source_digest(name: str) -> str:
    return hashlib.sha256(_module_file(name).read_bytes()).hexdigest()


def settings_digest(s: Settings, sections: tuple[str, ...]) -> dict:
    """The values of ``sections`` that reach bytes (a section's NOT_BYTES fields left out)."""
    return {sec: getattr(s, sec).model_dump(mode="json", exclude=set(NOT_BYTES.get(sec, ()))) for sec in sorted(set(sections))}


def code_version(module: str, sections: tuple[str, ...], s: Settings, sql: str | None = None) -> str:
    """A short hash of the sources of ``module``'s closure, a SQL model's text and the settings it reads."""
    parts = {
        "code": {m: _source_digest(m) for m in sorted(module_closure(module))},
        "sql": sql,
        "settings": settings_digest(s, sections),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def _sql_sections(model: SqlModel) -> tuple[str, ...]:
    """A SQL model reads the settings' splits only through the built-in ``splits`` relation."""
    return ("splits",) if "splits" in model.upstream or "splits" in model.sql else ()


def sections_of(key: dg.AssetKey) -> tuple[str, ...]:
    """The settings sections that reach an asset: a family's outputs (``<family>/...``) are its loop's
    (or its feedback's); an asset not listed gets every section that can reach bytes."""
    name = key.path[-1]
    if len(key.path) == 2:
        return SETTINGS_OF["feedback"] if name == "feedback" else LOOP
    return SETTINGS_OF.get(name, BYTE_SECTIONS)


def _defining_module(a: dg.AssetsDefinition) -> str:
    return a.op.compute_fn.decorated_fn.__module__


def with_catalog(a: dg.AssetsDefinition, s: Settings, models: dict[str, SqlModel]) -> dg.AssetsDefinition:
    """``a`` with its catalog metadata, owners, code version and freshness policy (defs/freshness.py)."""
    module = _defining_module(a)

    def attach(spec: dg.AssetSpec) -> dg.AssetSpec:
        name = spec.key.path[-1]
        model = models.get(name) if len(spec.key.path) == 1 else None
        if model is not None:
            version = code_version(f"{PACKAGE}.core.storage.sqlmodels", _sql_sections(model), s, sql=model.sql)
        else:
            version = code_version(module, sections_of(spec.key), s)
        meta = {**spec.metadata, **catalog_metadata(spec.key, s)}
        owners = [*spec.owners, *(o for o in OWNERS if o not in spec.owners)]
        fresh = freshness_of(spec.key, s)
        return spec.replace_attributes(
            metadata=meta, owners=owners, code_version=version, **({"freshness_policy": fresh} if fresh is not None else {})
        )

    return a.map_asset_specs(attach)
