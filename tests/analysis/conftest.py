"""Records of two jobs laid out as the runner writes them
(agents/job<id>/rank<r>.jsonl), with known answers, for the records, metrics,
plots and report tests."""

import warnings

import pytest

from analysis.records import RecordWarning, load_run
from analysis.synthetic import T0_NS, ring_times, write_jobs_run

MS = 1_000_000

# job 1: 3 ranks in lockstep, 10 ms steps, starting 2 ms after job 2:
#   4 steps per iteration -> CCT 40 ms in both iterations, misalignment 0.
# job 2: 3 ranks, 20 ms steps, rank 1 starts iteration 1 5 ms late:
#   iteration 0: 80 ms.  Iteration 1 (starts at +80 ms): step 0 of ranks 1
#   and 2 ends at +25 (rank 2 waits for rank 1's data), rank 0's at +20;
#   step 1 of every rank ends at +45 (rank 0 waits for rank 2), then
#   lockstep: +65, +85 -> CCT 85 ms.  Misalignment 1 from +80 to +85 (rank 1
#   still on step 3) and from +100 to +105 (rank 0 ahead on step 5), else 0:
#   10 ms of 165 ms.
JOB1 = ring_times(3, 2, 0.010, t0_ns=T0_NS + 2 * MS)
JOB2 = ring_times(3, 2, 0.020, t0_ns=T0_NS, straggle={(1, 1): 0.005})


def _two_job_run(path, variant="baseline", repeat=0, job2_step_s=None, **kw):
    job2 = JOB2 if job2_step_s is None else ring_times(3, 2, job2_step_s, t0_ns=T0_NS)
    return write_jobs_run(path, {1: JOB1, 2: job2}, variant=variant, repeat=repeat, **kw)


@pytest.fixture
def two_job_run():
    """two_job_run(path, variant="baseline", repeat=0, job2_step_s=None, **kw)
    -> the run directory (job 2 with other step times when job2_step_s is given)."""
    return _two_job_run


@pytest.fixture
def run(tmp_path):
    """The two jobs loaded, with a compute straggler of job 2 and a squeeze
    of h5's link (job 2's rank 1)."""
    d = _two_job_run(tmp_path / "r", jitter=[
        {"kind": "compute", "job": 2, "rank": 1, "start_s": None, "end_s": None,
         "params": {"iter": 1, "delay_s": 0.005}},
        {"kind": "rate", "link": "h5-s1", "start_s": 0.01, "end_s": 0.02, "params": {"rate_mbit": 5}}])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordWarning)   # a clean two-job run reads without a warning
        return load_run(d)
