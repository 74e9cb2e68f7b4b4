"""seed 000 Table 5 mapper: cues, counting, ties, no cue."""

from finrag_dagster.core.events import CAPITAL, EARNINGS, LEGAL, MANAGEMENT, OTHER, classify, cue_counts


def test_each_type_is_found_from_its_cues():
    assert classify("Apple beats EPS estimates, raises guidance")[0] == EARNINGS
    assert classify("FTC opens antitrust probe into Meta")[0] == LEGAL
    assert classify("Microsoft completes acquisition, announces buyback")[0] == CAPITAL
    assert classify("Intel CEO resigns; board appoints interim chief")[0] == MANAGEMENT


def test_largest_count_wins_over_a_single_competing_cue():
    # earnings: revenue, margin, profit (3) vs capital: deal (1)
    t, counts = classify("Revenue and margin up, profit doubles after deal")
    assert counts[EARNINGS] == 3 and counts[CAPITAL] == 1
    assert t == EARNINGS


def test_tie_is_other_mixed():
    t, counts = classify("Lawsuit follows merger")
    assert counts[LEGAL] == 1 and counts[CAPITAL] == 1
    assert t == OTHER


def test_no_cue_is_other_mixed():
    assert classify("Shares move in quiet trading", "Nothing else to report")[0] == OTHER


def test_word_boundaries_and_case():
    # 'finest' must not count 'fine'; 'deals' is not the cue 'deal'; 'EPS' matches any case
    assert cue_counts("The finest deals")[LEGAL] == 0
    assert cue_counts("The finest deals")[CAPITAL] == 0
    assert cue_counts("eps and EPS")[EARNINGS] == 2


def test_phrases_and_nested_cues_count_independently():
    c = cue_counts("FDA approval granted")
    assert c[LEGAL] == 2  # "fda" and "fda approval"
    c = cue_counts("Company raises guidance for fiscal Q3")
    assert c[EARNINGS] == 3  # "raises guidance", "guidance", "fiscal q"
    assert cue_counts("class   action filed")[LEGAL] == 1  # whitespace inside a phrase


def test_summary_is_read_too():
    assert classify("Company update", "The board appoints a new CFO")[0] == MANAGEMENT
