"""The variant families, declared once: what each one runs, what it is called in the report, and
which tables show it.

A family is a way of building the reader's context (seed 000 §4.2–4.3: no memory, the source
memory and its validity checks; seed 002: the Tree-of-Experience principle; the supervised LoRA
reader). This table drives the variants a family stands for (:func:`finrag_dagster.core.loop.variants_of`),
the Dagster assets under ``<family>/`` (memory snapshot only where a memory learns, the tree only
for ToE), the report's row labels and tables, and the settings' default list. Adding a family whose
behaviour is a combination of these switches is one line here.
"""

from __future__ import annotations

from dataclasses import dataclass

# where a family is a row: Tables 2 and 4 ("main"), Table 3 ("validity"), the LoRA rows of Tables 2 and 4 ("lora")
TABLE_ROWS = ("main", "validity", "lora")


@dataclass(frozen=True)
class Family:
    name: str  # the settings' name and the asset key prefix (letters, digits, underscores)
    label: str  # its row label in the report's tables
    memory: bool  # the source memory reranks the contexts (lambda of the settings) and learns from feedback
    credit: str = "cited"  # which passages a matured label credits: "cited" (eq. 5) or "top5" (all five shown)
    shuffle: str | None = None  # "labels" or "event_types": a validity check, one variant per shuffle seed
    toe: bool = False  # a Tree-of-Experience principle in the prompt, updated from matured feedback
    lora: bool = False  # read by the base model with a LoRA adapter, one variant per training seed
    rows: tuple[str, ...] = ()  # the tables it is a row of (TABLE_ROWS)
    default: bool = True  # run by default (settings.variants.families)


FAMILIES: tuple[Family, ...] = (
    Family("no_memory", "Frozen + No Memory", memory=False, rows=("main", "validity")),
    Family("source_memory", "Frozen + Source Memory", memory=True, rows=("main", "validity")),
    Family("top5_all_source", "+ Top-5 all-source update", memory=True, credit="top5", rows=("validity",)),
    Family("shuffled_labels", "+ Shuffled feedback labels", memory=True, shuffle="labels", rows=("validity",)),
    Family("shuffled_event_types", "+ Shuffled event types", memory=True, shuffle="event_types", rows=("validity",)),
    Family("toe", "Frozen + ToE", memory=False, toe=True, rows=("main",)),
    Family("source_memory_toe", "Frozen + Source Memory + ToE", memory=True, toe=True, rows=("main",)),
    Family("lora_no_memory", "LoRA + No Memory", memory=False, lora=True, rows=("lora",), default=False),
    Family("lora_source_memory", "LoRA + Source Memory", memory=True, lora=True, rows=("lora",), default=False),
)
BY_NAME = {f.name: f for f in FAMILIES}
NAMES = tuple(BY_NAME)
DEFAULT_FAMILIES = tuple(f.name for f in FAMILIES if f.default)
LORA_FAMILIES = tuple(f.name for f in FAMILIES if f.lora)
LABELS = {f.name: f.label for f in FAMILIES}


def family(name: str) -> Family:
    """The family called ``name`` (ValueError naming the known ones otherwise)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown variant family {name!r}; choose from {NAMES}") from None


def rows_of(table: str) -> tuple[str, ...]:
    """The families that are rows of ``table`` (one of TABLE_ROWS), in declaration order."""
    return tuple(f.name for f in FAMILIES if table in f.rows)


def assets_of(name: str) -> tuple[str, ...]:
    """The asset names under ``<family>/``: the loop's outputs (memory snapshot where a memory learns,
    the experience tree for ToE), then feedback."""
    f = family(name)
    return (("memory_snapshot",) if f.memory else ()) + (("experience_tree",) if f.toe else ()) + ("contexts", "reader_outputs", "feedback")
