"""Event-level metrics (seed 000 §4.2, Table 2; docs/method.md §7).

* Non-neutral F1: mean of the F1 scores of the +1 and −1 classes.
* Macro-F1: mean F1 over the three classes, per horizon; overall = mean over 1D/3D/5D.
* Rank IC: per decision day and horizon, the cross-sectional Spearman correlation between
  stock-day signals and the residual z; averaged over days, then horizons.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from ..f1 import macro_f1, non_neutral_f1
from ..settings import HORIZON_KEYS


def event_metrics(pred: pl.DataFrame) -> dict:
    """``pred``: horizon, signal, y (one row per anchor and horizon with a usable label)."""
    out = {}
    nn, mf = [], []
    for h in HORIZON_KEYS:
        g = pred.filter(pl.col("horizon") == h)
        if g.height == 0:
            out[f"{h} Macro-F1"] = math.nan
            continue
        yt, yp = g["y"].to_numpy(), g["signal"].to_numpy()
        out[f"{h} Macro-F1"] = macro_f1(yt, yp)
        nn.append(non_neutral_f1(yt, yp))
        mf.append(out[f"{h} Macro-F1"])
    out["Non-neutral F1"] = float(np.mean(nn)) if nn else math.nan
    out["Macro-F1"] = float(np.mean(mf)) if mf else math.nan
    out["n"] = pred.height
    return out


def rank_ic(stock_day: pl.DataFrame, min_names: int = 3) -> float:
    """``stock_day``: date, ticker, horizon, signal, z. Mean over horizons of the mean daily Spearman."""
    from scipy.stats import spearmanr

    per_h = []
    for h in HORIZON_KEYS:
        g = stock_day.filter(pl.col("horizon") == h).sort("date", "ticker")
        ics = []
        for (_,), d in g.group_by(["date"], maintain_order=True):  # fixed order: the mean is the same to the bit every run
            if d.height < min_names or d["signal"].n_unique() < 2 or d["z"].n_unique() < 2:
                continue
            ics.append(spearmanr(d["signal"].to_numpy(), d["z"].to_numpy()).statistic)
        if ics:
            per_h.append(float(np.mean(ics)))
    return float(np.mean(per_h)) if per_h else math.nan
