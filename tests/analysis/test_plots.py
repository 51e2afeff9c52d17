"""Plot helpers that need no figure: the timeline's rows and their labels."""

from analysis import plots


def test_timeline_has_a_row_per_job_and_rank(run):
    rows = plots.timeline_rows(run.events)
    assert rows == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]
    assert plots.row_labels(rows)[3] == "job 2 rank 0"
    assert plots.row_labels([(1, 0), (1, 1)]) == ["rank 0", "rank 1"]
