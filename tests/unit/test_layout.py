"""The layering the README promises: imports go one way, and core is plain Python.

``core`` imports neither Dagster nor ``defs``/``sources``/``pipeline``/``cli``; ``sources`` imports
no Dagster layer; the ``finrag`` command reaches the Dagster layer only through ``pipeline`` (which
runs the stages) and ``definitions``. Checked on the source text (every import, function-level
ones too), so a late import cannot slip past.
"""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "finrag_dagster"


def module_name(path: Path, root: Path = PKG) -> str:
    """``finrag_dagster/a/b.py`` -> ``finrag_dagster.a.b``; a package's ``__init__.py`` -> the package."""
    return ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")


def imports_of(path: Path, modules: set[str] | frozenset[str] = frozenset(), root: Path = PKG) -> set[str]:
    """Absolute module names imported by ``path`` (relative imports resolved, in a package's
    ``__init__.py`` too). ``from pkg import x`` gives both ``pkg`` and ``pkg.x``, which is the module
    imported when x is one; with ``modules`` (the package's modules) it gives ``pkg.x`` alone when
    that is a module (``pkg`` is then only its parent, imported first by Python), else ``pkg``."""
    mod = module_name(path, root)
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
            subs = {f"{src}.{a.name}" for a in node.names if a.name != "*"}
            if modules:
                out |= (subs & modules) | ({src} if subs - modules or not subs else set())
            else:
                out |= {src} | subs
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


# core's top: what runs the loop, evaluates and explains it, and the table registry over them all
CORE_TOP = tuple(f"finrag_dagster.core.{m}" for m in ("evaluation", "explain", "loop", "loop_io", "lake_prompts", "lora_train", "tables", "day_run"))


def test_core_s_building_blocks_never_import_its_top():
    """The reader, retrieval, memory, experience and storage packages sit under the loop and the
    evaluation that use them (a LoRA selection scoring with evaluation's F1 once broke this)."""
    for folder in ("core/reader", "core/retrieval", "core/memory", "core/experience", "core/storage"):
        assert offenders(folder, CORE_TOP) == []
    # the scan sees the reader's import of the F1 scores, where an upward one would show
    assert "finrag_dagster/core/reader/lora.py imports finrag_dagster.core.f1" in offenders("core/reader", ("finrag_dagster.core.f1",))


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


def import_cycles(root: Path) -> list[str]:
    """The modules of the package at ``root`` that import themselves through others."""
    mods = {module_name(p, root): p for p in root.rglob("*.py")}
    graph = {m: {i for i in imports_of(p, frozenset(mods), root) if i in mods and i != m} for m, p in mods.items()}

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

    return sorted(m for m in graph if reaches(m, m))


def test_no_import_cycle_in_the_package():
    """Every module of finrag_dagster imports one way, function-level imports included: the storage
    layer knows no stage (the catalog is assembled above them, in core/tables.py), the loaders sit
    below the stream that reads their files, and so on."""
    assert import_cycles(PKG) == []


def test_the_cycle_check_sees_cycles_through_a_packages_init(tmp_path):
    """A package's ``__init__.py`` that imports a submodule which imports a name of the package is a
    cycle (relative imports in ``__init__.py`` resolved); a submodule importing its sibling through
    ``from . import sibling`` is not."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .world import make\n")
    (pkg / "sub" / "params.py").write_text("X = 1\n")
    (pkg / "sub" / "world.py").write_text("from . import params\n\ndef make():\n    return params.X\n")
    assert import_cycles(pkg) == []
    (pkg / "sub" / "params.py").write_text("def f():\n    from . import make\n")
    assert import_cycles(pkg) == ["pkg.sub", "pkg.sub.params", "pkg.sub.world"]


def test_no_function_over_80_lines():
    """A function that grows past 80 lines is doing several things: split it where it is owned."""
    long = [
        f"{p.relative_to(PKG.parent)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
        for p in PKG.rglob("*.py")
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.end_lineno - n.lineno + 1 > 80
    ]
    assert long == []


# Benchmark and test-helper functions still over 80 lines: this list may only shrink.
LONG_OUTSIDE_THE_PACKAGE: set[str] = set()


def long_functions(root: Path, folders: tuple[str, ...], limit: int = 80) -> set[str]:
    """``folder/file.py:function`` over ``limit`` lines under ``folders`` of ``root``; in tests/ only
    the helpers (a test's own body is one scenario, read top to bottom)."""
    out = set()
    for folder in folders:
        for p in (root / folder).rglob("*.py"):
            for n in ast.walk(ast.parse(p.read_text())):
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.end_lineno - n.lineno + 1 > limit:
                    if not (folder == "tests" and n.name.startswith("test_")):
                        out.add(f"{p.relative_to(root).as_posix()}:{n.name}")
    return out


def test_no_benchmark_or_test_helper_over_80_lines(tmp_path):
    found = long_functions(PKG.parent, ("benchmarks", "tests", "scripts"))
    assert found - LONG_OUTSIDE_THE_PACKAGE == set(), "split it where it is owned"
    assert LONG_OUTSIDE_THE_PACKAGE - found == set(), "cut from the list: it is short now"
    (tmp_path / "tests").mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(80))
    (tmp_path / "tests" / "t.py").write_text(f"def helper():\n{body}\ndef test_long():\n{body}")
    assert long_functions(tmp_path, ("tests",)) == {"tests/t.py:helper"}


def long_module_docstrings(root: Path, limit: int = 15) -> list[str]:
    """Modules whose docstring runs over ``limit`` lines (design notes belong on the stage's doc page)."""
    out = []
    for p in sorted(root.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(p.read_text()), clean=False)
        if doc and doc.count("\n") + 1 > limit:
            out.append(f"{p.relative_to(root.parent)}: {doc.count(chr(10)) + 1} lines")
    return out


def test_module_docstrings_are_a_short_paragraph(tmp_path):
    assert long_module_docstrings(PKG) == []
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text('"""' + "line\n" * 15 + '"""\n')  # 16 lines: caught
    assert long_module_docstrings(tmp_path / "pkg") == ["pkg/m.py: 16 lines"]


# Functions that may take more than 8 parameters. numba kernels (decorated @njit) are exempt by rule:
# nopython code takes its arrays one by one (a dataclass does not enter it), and they are the hot loop.
# So are the `finrag` commands (cli/): each option a user types is one parameter of its Typer
# command. Every other signature takes a settings section or an inputs dataclass instead; a new
# exception goes here only with its reason.
MANY_PARAMETERS_TO_CUT: set[str] = set()


def many_parameters(root: Path = PKG, limit: int = 8) -> set[str]:
    """``path:function`` of every function over ``limit`` parameters (self and cls not counted),
    numba kernels and the command line's commands left out."""
    out = set()
    for p in root.rglob("*.py"):
        rel = p.relative_to(root).as_posix()
        if rel.startswith("cli/"):
            continue
        for n in ast.walk(ast.parse(p.read_text())):
            if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if any("njit" in ast.unparse(d) for d in n.decorator_list):
                continue
            a = n.args
            names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs] + [x.arg for x in (a.vararg, a.kwarg) if x]
            if len([x for x in names if x not in ("self", "cls")]) > limit:
                out.add(f"{rel}:{n.name}")
    return out


def test_no_function_over_8_parameters(tmp_path):
    found = many_parameters()
    assert found - MANY_PARAMETERS_TO_CUT == set(), "pass a settings section or an inputs dataclass instead"
    assert MANY_PARAMETERS_TO_CUT - found == set(), "cut from the list: it no longer needs the exception"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("def f(a, b, c, d, e, f, g, h, i): ...\ndef g(self, a, b, c, d, e, f, g, h): ...\n")
    assert many_parameters(tmp_path / "pkg") == {"m.py:f"}
