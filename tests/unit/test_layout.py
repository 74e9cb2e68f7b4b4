"""The layering the README promises: imports go one way, and core is plain Python.

``core`` imports neither Dagster nor ``defs``/``sources``/``pipeline``/``cli``; ``sources`` imports
no Dagster layer; the ``finrag`` command reaches the Dagster layer only through ``pipeline`` (which
runs the stages) and ``definitions``. Checked on the source text (every import, function-level
ones too), so a late import cannot slip past.
"""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "finrag_dagster"


def imports_of(path: Path) -> set[str]:
    """Absolute module names imported by ``path`` (relative imports resolved; ``from pkg import x``
    gives both ``pkg`` and ``pkg.x``, which is the module imported when x is one)."""
    mod = ".".join(path.relative_to(PKG.parent).with_suffix("").parts)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            out |= {src} | {f"{src}.{a.name}" for a in node.names if a.name != "*"}
    return out


def offenders(folder: str, banned: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{p.relative_to(PKG.parent)} imports {m}"
        for p in (PKG / folder).rglob("*.py")
        for m in imports_of(p)
        if any(m == b or m.startswith(b + ".") for b in banned)
    )


def test_core_is_plain_python_below_every_other_layer():
    banned = (
        "dagster",
        "dagster_webserver",
        "finrag_dagster.defs",
        "finrag_dagster.sources",
        "finrag_dagster.pipeline",
        "finrag_dagster.definitions",
        "finrag_dagster.cli",
    )
    assert offenders("core", banned) == []


def test_sources_do_not_import_the_dagster_layer():
    assert offenders("sources", ("dagster", "finrag_dagster.defs", "finrag_dagster.pipeline", "finrag_dagster.definitions")) == []


def test_the_command_line_uses_core_not_the_assets():
    cli = list((PKG / "cli").rglob("*.py"))
    assert cli and [f"{p.name} imports {m}" for p in cli for m in imports_of(p) if m.startswith("finrag_dagster.defs")] == []


# Dagster plumbing under defs/ that holds no asset: a benchmark may measure it
PLUMBING = ("finrag_dagster.defs.event_log", "finrag_dagster.defs.executor")


def test_benchmarks_do_not_import_the_assets_except_the_scale_benchmark():
    """benchmarks/scale.py measures the Dagster layer by design; the others time core (or run stages
    via pipeline), or the Dagster plumbing that holds no asset (the event log, the executor's setting)."""
    bench = PKG.parent / "benchmarks"
    found = sorted(
        f"{p.name} imports {m}"
        for p in bench.glob("*.py")
        if p.name != "scale.py"
        for m in imports_of(p)
        if m.startswith(("finrag_dagster.defs", "finrag_dagster.definitions")) and not m.startswith(PLUMBING)
    )
    assert list(bench.glob("*.py")) and found == []


def test_no_import_cycle_in_the_package():
    """Every module of finrag_dagster imports one way, function-level imports included: the storage
    layer knows no stage (the catalog is assembled above them, in core/tables.py), the loaders sit
    below the stream that reads their files, and so on."""
    mods = {".".join(p.relative_to(PKG.parent).with_suffix("").parts).removesuffix(".__init__"): p for p in PKG.rglob("*.py")}
    graph = {m: {i for i in imports_of(p) if i in mods and i != m} for m, p in mods.items()}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                todo += graph[m]
        return False

    assert sorted(m for m in graph if reaches(m, m)) == []
