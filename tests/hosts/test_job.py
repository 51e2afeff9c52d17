"""The job file: reading, writing, one-line errors naming the field."""

import subprocess
import sys

import pytest

from hosts.job import (
    PRECOMPUTE_BYTES,
    RUN_SLACK_S,
    START_SLACK_S,
    Deadlines,
    JobError,
    JobSpec,
    RankSpec,
    Straggle,
    bytes_drawn_before_ready,
    derived_deadlines,
    drawn_ahead,
    dump_job,
    first_step_slack,
    load_job,
    parse_job,
)
from hosts.udp.params import FaultParams, UdpParams
from tests.harness import REPO

GOOD = """
job = 1
data_port = 5000
message_bytes = 1000000
iterations = 3
transport = "udp"
seed = 1
[[ranks]]
rank = 0
ip = "10.0.0.1"
host = "h1"
[[ranks]]
rank = 1
ip = "10.0.0.2"
[udp]
payload_bytes = 1400
rto_ms = 50
window_packets = 64
[dcqcn]
preset = "off"
line_rate_mbit = 20
[deadlines]
step_s = 10.0
run_s = 120.0
[[straggle]]
rank = 1
iter = 1
delay_s = 0.5
"""


def _write(tmp_path, text, name="job.toml"):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def test_contract_example_loads(tmp_path):
    spec = load_job(_write(tmp_path, GOOD))
    assert spec.job == 1 and spec.n_ranks == 2 and spec.ips == ["10.0.0.1", "10.0.0.2"]
    assert spec.ranks[0].host == "h1"
    assert spec.udp == UdpParams(payload_bytes=1400, rto_ms=50, window_packets=64)
    assert spec.line_rate_bps == 20e6
    assert spec.deadlines == Deadlines(10.0, 120.0)
    assert spec.straggle_delay(1, 1) == 0.5 and spec.straggle_delay(0, 1) == 0.0
    assert derived_deadlines(spec) == (10.0, 120.0)


def test_round_trip(tmp_path):
    spec = JobSpec(job=9, data_port=6000, message_bytes=400_012, iterations=2,
                   ranks=(RankSpec(0, "10.1.0.1", "a"), RankSpec(1, "10.1.0.2"),
                          RankSpec(2, "10.1.0.3")),
                   seed=77, udp=UdpParams(rto_ms=20.0), dcqcn={"preset": "emulation",
                                                              "line_rate_mbit": 100.0},
                   deadlines=Deadlines(step_s=3.0), straggle=(Straggle(2, 1, 0.25),),
                   faults=FaultParams(drop=0.05, duplicate=0.01, reorder=0.02, seed=3))
    p = tmp_path / "rt.toml"
    dump_job(spec, p)
    assert load_job(p) == spec


def test_derived_deadlines_scale_with_the_bound(tmp_path):
    small = parse_job({"job": 1, "data_port": 5000, "message_bytes": 4000, "iterations": 1,
                       "ranks": [{"rank": 0, "ip": "10.0.0.1"}, {"rank": 1, "ip": "10.0.0.2"}],
                       "dcqcn": {"line_rate_mbit": 10}})
    big = parse_job({**_doc(), "message_bytes": 40_000_000, "dcqcn": {"line_rate_mbit": 10}})
    s1, r1 = derived_deadlines(small)
    s2, r2 = derived_deadlines(big)
    assert s2 > s1 and r2 > r1
    assert s2 >= 10 * 20_000_000 * 8 / 10e6        # 10 x one step's bound
    assert r1 >= s1


def test_derived_deadlines_at_a_shared_rate():
    doc = {**_doc(), "message_bytes": 40_000_000, "dcqcn": {"line_rate_mbit": 10}}
    doc.pop("deadlines", None)
    full = parse_job(doc)
    quarter = parse_job({**doc, "deadlines": {"rate_mbit": 2.5}})
    assert quarter.deadlines.rate_mbit == 2.5
    (s1, r1), (s4, r4) = derived_deadlines(full), derived_deadlines(quarter)
    bound = 20_000_000 * 8 / 10e6                  # one step at the line rate
    assert s4 - s1 == pytest.approx(3 * 10 * bound) and r4 - r1 == pytest.approx(3 * (r1 - RUN_SLACK_S))
    assert first_step_slack(quarter) == first_step_slack(full) == START_SLACK_S
    with pytest.raises(JobError, match="deadlines.rate_mbit"):
        parse_job({**doc, "deadlines": {"rate_mbit": 0}})


def _doc(**kw):
    d = {"job": 1, "data_port": 5000, "message_bytes": 4000, "iterations": 1,
         "ranks": [{"rank": 0, "ip": "10.0.0.1"}, {"rank": 1, "ip": "10.0.0.2"}]}
    d.update(kw)
    return d


@pytest.mark.parametrize("change,field", [
    ({"job": 70000}, "job"),
    ({"job": "one"}, "job"),
    ({"data_port": 0}, "data_port"),
    ({"data_port": 49151}, "data_port"),
    ({"message_bytes": 4002}, "message_bytes"),
    ({"message_bytes": 4}, "message_bytes"),
    ({"iterations": 0}, "iterations"),
    ({"transport": "rdma"}, "transport"),
    ({"ranks": [{"rank": 0, "ip": "10.0.0.1"}]}, "ranks"),
    ({"ranks": [{"rank": 0, "ip": "10.0.0.1"}, {"rank": 2, "ip": "10.0.0.2"}]}, "ranks[1].rank"),
    ({"ranks": [{"rank": 0, "ip": "10.0.0.1"}, {"rank": 1, "ip": "10.0.0.300"}]}, "ranks[1].ip"),
    ({"ranks": [{"rank": 0, "ip": "10.0.0.1"}, {"rank": 1, "ip": "10.0.0.1"}]}, "ranks[1].ip"),
    ({"ranks": [{"rank": 0, "ip": "10.0.0.1"}, {"rank": 1}]}, "ranks[1].ip"),
    ({"udp": {"payload_bytes": 0}}, "udp.payload_bytes"),
    ({"udp": {"window_packets": 9000}}, "udp.window_packets"),
    ({"udp": {"rto_ms": "fast"}}, "udp.rto_ms"),
    ({"udp": {"mtu": 1500}}, "udp.mtu"),
    ({"dcqcn": {"preset": "fast"}}, "dcqcn.preset"),
    ({"dcqcn": {"line_rate_mbit": -1}}, "dcqcn.line_rate_mbit"),
    ({"dcqcn": {"colour": 1}}, "dcqcn"),
    ({"dcqcn": {"step_ms": 0}}, "dcqcn.step_ms"),
    ({"dcqcn": {"step_ms": "long"}}, "dcqcn.step_ms"),
    ({"dcqcn": {"timer_floor_ms": -1}}, "dcqcn.timer_floor_ms"),
    ({"dcqcn": {"line_rate_mbit": 10, "increase_period_ms": -1}}, "dcqcn parameter 'increase_period_s'"),
    ({"deadlines": {"step_s": 0}}, "deadlines.step_s"),
    ({"straggle": [{"rank": 5, "iter": 0, "delay_s": 1}]}, "straggle[0].rank"),
    ({"straggle": [{"rank": 0, "iter": 0}]}, "straggle[0].delay_s"),
    ({"faults": {"drop": 0.9}}, "faults.drop"),
    ({"colour": "blue"}, "colour"),
])
def test_bad_fields_are_named(change, field):
    doc = _doc(**change)
    with pytest.raises(JobError) as e:
        parse_job(doc)
    msg = str(e.value)
    assert msg.startswith(field), msg
    assert "\n" not in msg


def test_missing_field_named():
    doc = _doc()
    del doc["data_port"]
    with pytest.raises(JobError, match="^data_port: missing"):
        parse_job(doc)


def test_not_toml_and_missing_file(tmp_path):
    with pytest.raises(JobError, match="not valid TOML"):
        load_job(_write(tmp_path, "job = = 1"))
    with pytest.raises(JobError, match="cannot read"):
        load_job(tmp_path / "nope.toml")


def test_a_job_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "job.toml"
    path.write_bytes(b'job = 1\n# caf\xe9\n')
    with pytest.raises(JobError) as err:
        load_job(path)
    assert str(err.value) == f"{path}: not UTF-8 text (byte 0xe9 at offset 13)"


def _agent(*args):
    return subprocess.run([sys.executable, "-m", "hosts.agent", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=60)


@pytest.mark.parametrize("text,field", [
    (GOOD.replace("message_bytes = 1000000", "message_bytes = 1000001"), "message_bytes"),
    (GOOD.replace('ip = "10.0.0.2"', 'ip = "ten"'), "ranks[1].ip"),
    (GOOD.replace("rto_ms = 50", "rto_ms = -5"), "udp.rto_ms"),
    ("job = [", "not valid TOML"),
    (b"job = 1\n# \xff\n", "not UTF-8 text (byte 0xff at offset 10)"),
])
def test_agent_malformed_job_one_line_exit_2(tmp_path, text, field):
    p = _write(tmp_path, text)
    r = _agent("--job", str(p), "--rank", "0", "--log-dir", str(tmp_path / "a"))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_agent_bad_rank_and_foreign_address(tmp_path):
    p = _write(tmp_path, GOOD.replace("10.0.0.1", "192.0.2.1"))
    r = _agent("--job", str(p), "--rank", "5", "--log-dir", str(tmp_path / "a"))
    assert r.returncode == 2 and "--rank 5" in r.stderr and "Traceback" not in r.stderr
    # 192.0.2.1 (TEST-NET-1) is not an address of this host
    r = _agent("--job", str(p), "--rank", "0", "--log-dir", str(tmp_path / "a"))
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "cannot bind 192.0.2.1" in r.stderr


def test_first_step_slack_only_when_derived():
    assert first_step_slack(parse_job(_doc())) == START_SLACK_S
    assert first_step_slack(parse_job(_doc(deadlines={"step_s": 2.0}))) == 0.0


def test_the_first_iteration_is_drawn_before_ready_even_when_the_rest_do_not_fit():
    # drawn after the start, a large job's first step waited for its inputs
    assert 2 * 40_000_000 > PRECOMPUTE_BYTES and drawn_ahead(1, 40_000_000) == 1
    assert drawn_ahead(3, 16 * 2**20) == 1
    assert drawn_ahead(3, 1_000_000) == 3
    spec = JobSpec(job=1, data_port=5000, message_bytes=40_000_000, iterations=2,
                   ranks=tuple(RankSpec(r, f"10.0.0.{r + 1}") for r in range(6)))
    assert bytes_drawn_before_ready(spec) == 6 * 40_000_000
