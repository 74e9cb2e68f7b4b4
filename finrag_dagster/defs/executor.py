"""How the multiprocess executor reads its step processes' events.

Dagster's multiprocess executor (the default for jobs, and what ``finrag demo`` runs a parallel stage
with) reads the running steps' event queues in turn, one event per step per round, and waits up to
``TICK`` (20 ms) on every queue that is empty. A step of a range run ends by sending one
materialisation per partition and output (a decision-year loop family: ~750-1,000 events); while
another step is still computing, each of those events costs the parent a 20 ms wait on the other
queue, so the finished step's process lingers 5-15 s (its queue's feeder thread cannot flush) and
its slot stays empty. ``read_step_events_promptly`` lowers that wait to 2 ms: the demo's loop stage
(two step processes) 164 s -> 140 s for ~2 s more CPU in the run's own process
(``benchmarks/step_events.py`` measures the effect on one job; docs/scale.md).
"""

from __future__ import annotations

STEP_EVENT_POLL_S = 0.002  # seconds the executor waits on an empty step queue (Dagster: 0.02)


def read_step_events_promptly() -> bool:
    """Make this process's multiprocess executor wait at most ``STEP_EVENT_POLL_S`` on an empty
    step queue; False (nothing changed) where the installed Dagster no longer has that setting."""
    try:
        from dagster._core.executor import child_process_executor as cpe
    except ImportError:
        return False
    tick = getattr(cpe, "TICK", None)
    if not isinstance(tick, float):
        return False
    cpe.TICK = min(tick, STEP_EVENT_POLL_S)
    return True
