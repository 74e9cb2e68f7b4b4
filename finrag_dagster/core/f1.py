"""F1 scores of −1/0/+1 signals (Seed 000 §4.2, Table 2): the non-neutral F1 and the three-class
macro-F1. They sit at the bottom of ``core`` because the reader's LoRA selection and the evaluation
both score with them."""

from __future__ import annotations


def non_neutral_f1(y_true, y_pred) -> float:
    """Mean of the F1 scores of the +1 and −1 classes (Seed 000 §4.2)."""
    from sklearn.metrics import f1_score  # here, not at import: every Dagster step process loads this module

    return float(f1_score(y_true, y_pred, labels=[1, -1], average="macro", zero_division=0))


def macro_f1(y_true, y_pred) -> float:
    """Mean F1 over the three classes (Seed 000 Table 2, one horizon)."""
    from sklearn.metrics import f1_score

    return float(f1_score(y_true, y_pred, labels=[1, 0, -1], average="macro", zero_division=0))
