"""Errors a computation raises when it cannot go on as asked.

The message says what is wrong and what to do. The Dagster layer reports a :class:`StepError` as
the asset's failure (``dagster.Failure`` with the message), and the ``finrag`` command prints it
as its one-paragraph error.
"""


class StepError(RuntimeError):
    """A step cannot run as asked (an input is missing, the settings rule it out)."""


class MissingInput(StepError):
    """An input the step reads is not in the lake yet: materialise it first."""
