"""Progress lines: counts, rate and ETA from an injected clock; one line every N items."""

from finrag_dagster.core.progress import Progress, progress_line


def test_line_reports_count_rate_and_eta():
    assert progress_line("evidence", 40, 250, 20.0, "days") == "evidence: 40/250 days (16%), 2.00 days/s, ETA 1m45s"
    assert progress_line("x", 0, 10, 0.0, "days").endswith("ETA ?")


def test_a_line_every_n_items_and_one_at_the_end():
    t = iter(range(0, 1000, 2))  # each call of the clock advances 2 s
    lines = []
    with Progress(50, "loop", log=lines.append, every=20, clock=lambda: float(next(t))) as p:
        for _ in range(50):
            p.update()
    assert len(lines) == 3 and lines[0].startswith("loop: 20/50 days (40%)") and lines[1].startswith("loop: 40/50")
    assert lines[2].startswith("loop: 50/50 days (100%)") and lines[2].endswith("(done)")
