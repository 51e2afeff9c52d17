"""Per-window rates, CNPs and steps (analysis.metrics.rate_windows) on
hand-made records with known answers, and `python3 -m analysis rates`."""

import pytest

from analysis import metrics as m
from analysis.__main__ import main
from analysis.synthetic import demo_experiment
from contract import exits

S = 1_000_000_000  # ns


def ev(t_s, kind, rank=0, job=1, **extra):
    return {"t": int(t_s * S), "kind": kind, "job": job, "rank": rank, "iter": 0, "step": 0, **extra}


def test_a_busy_senders_rate_is_time_weighted_per_window_and_counts_land_in_their_windows():
    events = [ev(0.0, "step_start"), ev(1.0, "rate", rc=5.0, rt=10.0, alpha=0.5), ev(1.5, "cnp", dir="rx", peer=1),
              ev(1.5, "cnp", dir="tx", peer=1), ev(2.5, "step_end", bytes=1), ev(3.0, "step_start"),
              ev(3.5, "step_end", bytes=1)]
    out = m.rate_windows(events, 0, S, 4, line_bps=10.0)
    # line rate until the first rate event, 5 after; idle in [2.5, 3.0); a tx CNP is the receiver's, not counted
    assert out[1]["rc_sum_bps"] == pytest.approx([10.0, 5.0, 2.5, 2.5])
    assert out[1]["cnp_rx"] == [0, 1, 0, 0] and out[1]["steps_ended"] == [0, 0, 1, 1]


def test_senders_of_a_job_add_up_and_jobs_stay_apart():
    events = sorted([ev(0.0, "step_start", rank=0), ev(0.0, "step_start", rank=1), ev(0.0, "step_start", job=2),
                     ev(2.0, "step_end", rank=0, bytes=1), ev(2.0, "step_end", rank=1, bytes=1),
                     ev(1.0, "step_end", job=2, bytes=1)], key=lambda e: e["t"])
    out = m.rate_windows(events, 0, S, 2, line_bps=4.0)
    assert out[1]["rc_sum_bps"] == [8.0, 8.0] and out[2]["rc_sum_bps"] == [4.0, 0.0]


def test_without_a_line_rate_a_sender_counts_from_its_first_rate_event():
    events = [ev(0.0, "step_start"), ev(1.0, "rate", rc=3.0, rt=3.0, alpha=1.0), ev(2.0, "step_end", bytes=1)]
    assert m.rate_windows(events, 0, S, 2, line_bps=None)[1]["rc_sum_bps"] == [0.0, 3.0]


def test_the_cli_prints_a_table_per_run_and_refuses_a_directory_that_is_no_run(tmp_path, capsys):
    runs = demo_experiment(tmp_path / "exp", repeats=1)
    assert main(["rates", *map(str, runs), "--window", "0.05", "--windows", "3"]) == exits.OK
    out = capsys.readouterr().out
    assert out.count("windows of 0.05 s") == len(runs) and "job 1 Rc Gb/s" in out
    assert main(["rates", str(tmp_path)]) == exits.USAGE
    assert "not a run directory" in capsys.readouterr().err
    assert main(["rates", str(runs[0]), "--window", "0"]) == exits.USAGE


def test_a_cnps_delay_is_from_its_receivers_tx_to_the_senders_next_rx_from_that_receiver():
    events = [ev(1.0, "cnp", rank=1, dir="tx", peer=0), ev(1.25, "cnp", rank=0, dir="rx", peer=1),
              ev(2.0, "cnp", rank=1, dir="tx", peer=0),                   # lost: counts until the next one
              ev(3.0, "cnp", rank=1, dir="tx", peer=0), ev(3.5, "cnp", rank=0, dir="rx", peer=1),
              ev(3.1, "cnp", rank=2, dir="rx", peer=1),                   # from rank 1 to another sender
              ev(4.0, "cnp", rank=1, dir="tx", peer=0),                   # never arrived: no figure
              ev(1.0, "cnp", rank=1, job=2, dir="tx", peer=0)]           # another job's ring
    assert m.cnp_delays(events) == [S // 4, S // 2, 3 * S // 2]
