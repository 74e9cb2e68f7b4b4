"""The code versions' import scan (defs/catalog.py) against a whole-module parse, on the package itself."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from finrag_dagster.defs import catalog

PKG = Path(catalog.__file__).resolve().parents[1]


def whole_parse_imports(name: str, path: Path) -> set[str]:
    """What ``catalog._imports`` found before the scan: every import node of the whole module."""
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]) if node.level else ""
            src = ".".join(p for p in (base, node.module or "") if p)
            out |= {src} | {f"{src}.{a.name}" for a in node.names if a.name != "*"}
    return {m for m in out if m.startswith(catalog.PACKAGE) and catalog._module_file(m) is not None}


def test_the_import_scan_finds_what_a_whole_parse_finds_in_every_module():
    mods = sorted(PKG.rglob("*.py"))
    assert len(mods) > 50
    for p in mods:
        rel = p.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        assert catalog._imports(name, p) == whole_parse_imports(name, p), name


def test_the_scan_reads_lazy_multiline_and_relative_imports(tmp_path):
    src = (
        '"""from the lake import nothing: prose"""\n'
        "from .storage import (\n    lake,\n    atomic,\n)\n"
        "def f():\n    from ..sources import base\n    import finrag_dagster.core.calendar\n"
    )
    found = {f"{type(n).__name__}:{getattr(n, 'module', None)}:{n.level if isinstance(n, ast.ImportFrom) else 0}" for n in catalog._import_nodes(src)}
    assert found == {"ImportFrom:storage:1", "ImportFrom:sources:2", "Import:None:0"}


def test_importing_the_pipeline_builds_no_definitions():
    """Every step process imports the pipeline: the UI's module-level definitions are not built there."""
    code = "import sys, finrag_dagster.pipeline; print('finrag_dagster.definitions' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=PKG.parent)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"
