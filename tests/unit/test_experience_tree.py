"""Tree-of-Experience core against hand-computed selections and updates (seed 002 eqs 6-13)."""

import math

import numpy as np
import pytest

from finrag_dagster.core.experience.tree import ExperienceTree, Factor, Leaf, ToEParams, formula_update, keyword_match


def unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_formula_update_by_hand():
    # neutral utility, first hit: Q = 1 + 10 * 1 / (1 + log 1) * 0.02 = 1.2
    assert formula_update(1.0, 0.02, 0) == pytest.approx(1.2)
    # boundary-aware and hit-decayed: Q = 1.5, n_hit = 3
    assert formula_update(1.5, -0.01, 3) == pytest.approx(1.5 - 10 * 0.75 / (1 + math.log(4)) * 0.01)
    # clipped to [0, 2 q0], and a path at the bound does not move
    assert formula_update(1.9, 0.5, 0) == 2.0 and formula_update(0.1, -0.5, 0) == 0.0
    assert formula_update(2.0, 0.3, 0) == 2.0


def test_keyword_match_and_selection_by_hand():
    assert keyword_match("Chip demand and supply chain strain", ("chip", "supply chain", "tariff")) == pytest.approx(2 / 3)
    e_state = unit([1, 0, 0])
    close = Leaf("L1", "supply", "shortages lift prices", unit([0.9, 0.1, 0]), {"1D": 1.5, "3D": 1.0, "5D": 1.0})
    far = Leaf("L2", "supply", "unrelated", unit([0, 1, 0]), {"1D": 2.0, "3D": 1.0, "5D": 1.0})
    other = Leaf("L3", "rates", "rate cuts help growth", unit([1, 0, 0]), {"1D": 1.0, "3D": 1.0, "5D": 1.0})
    tree = ExperienceTree([Factor("supply", ("chip", "supply chain"), [close, far]), Factor("rates", ("rate", "fed"), [other])])
    sel = tree.select("chip supply chain strain", e_state, "1D")
    cos = float(np.dot(e_state, close.embedding))
    assert sel.leaf is close and not sel.expand
    assert sel.rho == pytest.approx(math.sqrt(1.0 * cos)) and sel.score == pytest.approx(sel.rho * 1.5)
    assert [c[0] for c in sel.candidates] == ["L1"]  # the far leaf is below the 0.8 threshold; "rates" did not match
    assert close.n_recall == 1


def test_expansion_when_nothing_clears_the_threshold_and_update_after_maturity():
    tree = ExperienceTree([Factor("supply", ("chip",), [Leaf("L1", "supply", "p", unit([0, 1, 0]), {"1D": 1.0, "3D": 1.0, "5D": 1.0})])])
    sel = tree.select("chip news", unit([1, 0, 0]), "3D")
    assert sel.expand and sel.leaf is None and sel.factor.name == "supply"
    new = tree.expand(sel.factor, "chip shortages persist", unit([1, 0, 0]))
    assert new.q == {"1D": 1.0, "3D": 1.0, "5D": 1.0} and new.leaf_id == "L00001"
    assert tree.select("chip news", unit([1, 0, 0]), "3D").leaf is new
    assert tree.update(new.leaf_id, "3D", -0.01) == pytest.approx(1.0 - 0.1) and new.n_hit == 1
    assert new.q["1D"] == 1.0  # only the matured horizon moves
    assert "chip shortages persist" in tree.to_markdown()
    assert tree.select("nothing relevant", unit([1, 0, 0]), "1D").factor is None  # no factor matched: nothing to expand
    assert ToEParams().k1 == 8 and ToEParams().leaf_threshold == 0.8
