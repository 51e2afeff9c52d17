"""Jitter windows placed among the ranks: an access link's window gets its
host's job and rank, a compute straggler the window its rank started late."""

from analysis import windows as W
from analysis.synthetic import T0_NS

MS = 1_000_000


def test_access_link_jitter_is_attached_to_its_rank():
    config = {"jobs": [{"job": 1, "hosts": ["h1", "h3", "h2", "h4"]}]}
    windows = [{"kind": "rate", "link": "h3-l2"}, {"kind": "rate", "link": "l1-s1"},
               {"kind": "compute", "rank": 2, "link": None}]
    out = W.attach_link_ranks(windows, config)
    assert (out[0]["job"], out[0]["rank"]) == (1, 1)
    assert "rank" not in out[1]
    assert out[2]["rank"] == 2


def test_jitter_lands_on_the_right_job(run):
    compute, rate = run.jitter
    # job 2's rank 1 starts iteration 1 at +85 ms (job 1's rank 1 at +42 ms)
    assert compute["end_ns"] == T0_NS + 85 * MS and compute["start_ns"] == T0_NS + 80 * MS
    assert (rate["job"], rate["rank"]) == (2, 1)          # h5 is job 2's rank 1
