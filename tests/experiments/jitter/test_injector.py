"""The injector against a fake network on a virtual clock."""

import json
import subprocess

import pytest

from experiments import config as C
from experiments.jitter import blaster
from experiments.jitter import schedule as J
from experiments.jitter.injector import Injector, InjectorError, netem_support, write_schedule


class FakeProc:
    def __init__(self):
        self.code = None
        self.terminated = False

    def poll(self):
        return self.code

    def terminate(self):
        self.terminated = True
        self.code = -15

    def kill(self):
        self.code = -9

    def wait(self, timeout=None):
        return self.code


class FakeNet:
    def __init__(self, fail_on=None):
        self.calls = []
        self.procs = []
        self.fail_on = fail_on

    def set_link_rate(self, link, rate):
        if self.fail_on == link:
            raise RuntimeError("control socket gone")
        self.calls.append(("rate", link, rate))

    def popen(self, host, args, **kw):
        self.calls.append(("popen", host, tuple(args)))
        p = FakeProc()
        self.procs.append(p)
        return p


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def schedule(jitter, via="fallback"):
    raw = {"name": "i", "seed": 1,
           "topology": {"kind": "leafspine", "hosts": 4, "leaves": 2, "spines": 1, "host_rate_mbit": 10},
           "jobs": [{"ranks": 4, "message_bytes": 4000, "iterations": 1}], "jitter": jitter}
    return J.apply_fallbacks(J.make_schedule(C.resolve(raw), 1), via)[0]


def test_rate_squeeze_applied_on_time_and_restored(tmp_path):
    events = schedule([{"kind": "rate", "rank": 1, "start_s": 1.0, "duration_s": 2.0, "fraction": 0.25}])
    net, clock = FakeNet(), Clock()
    inj = Injector(net, events, tmp_path / "applied.jsonl", clock=clock, wall_ns=lambda: 123)
    inj.start()
    assert inj.tick() == [] and net.calls == []
    clock.t += 0.99
    assert inj.tick() == []
    clock.t += 0.02
    assert [a["op"] for a in inj.tick()] == ["set_rate"]
    link = events[0]["link"]
    assert net.calls == [("rate", link, 2.5)]
    clock.t += 2.0
    inj.tick()
    assert net.calls[-1] == ("rate", link, 10.0)
    assert inj.next_due() is None and inj.squeezed == {}
    inj.stop()
    lines = [json.loads(x) for x in (tmp_path / "applied.jsonl").read_text().splitlines()]
    assert [x["rate_mbit"] for x in lines] == [2.5, 10.0]
    assert lines[0]["t"] == 123 and lines[0]["t_sched_s"] == 1.0 and lines[0]["t_rel_s"] == pytest.approx(1.01)


def test_the_record_says_when_an_action_was_begun_and_when_done(tmp_path):
    """t_begun is read before the network call, t after it: a slow control
    call shows as their difference, apart from how late the loop came."""
    events = schedule([{"kind": "rate", "rank": 1, "start_s": 0.0, "duration_s": 1.0, "fraction": 0.5}])
    walls = iter([1_000, 41_000])
    inj = Injector(FakeNet(), events, tmp_path / "applied.jsonl", clock=Clock(), wall_ns=lambda: next(walls))
    inj.start()
    inj.tick()
    line = json.loads((tmp_path / "applied.jsonl").read_text())
    assert (line["t_begun"], line["t"]) == (1_000, 41_000)


def test_stop_restores_a_squeeze_still_in_force():
    events = schedule([{"kind": "rate", "link": "l1-p1", "start_s": 0.0, "duration_s": 50, "fraction": 0.5}])
    net, clock = FakeNet(), Clock()
    inj = Injector(net, events, clock=clock)
    inj.start()
    inj.tick()
    assert net.calls == [("rate", "l1-p1", 5.0)]
    assert inj.stop() == []
    assert net.calls[-1] == ("rate", "l1-p1", 10.0)


def test_cross_traffic_blaster_started_on_src_and_stopped():
    events = schedule([{"kind": "cross", "src": "h1", "dst": "h4", "start_s": 0.5, "duration_s": 1.5,
                        "rate_mbit": 3}])
    net, clock = FakeNet(), Clock()
    inj = Injector(net, events, clock=clock, python="/usr/bin/python3")
    inj.start()
    clock.t += 0.6
    inj.tick()
    (kind, host, args), = net.calls
    assert kind == "popen" and host == "h1"
    assert args[:3] == ("/usr/bin/python3", "-m", "experiments.jitter.blaster")
    assert args[args.index("--dst") + 1] == "10.0.0.4"
    assert args[args.index("--rate-mbit") + 1] == "3"
    assert args[args.index("--duration") + 1] == "1.5"
    clock.t += 1.5
    inj.tick()
    assert net.procs[0].terminated


def test_stop_kills_blasters_still_running():
    events = schedule([{"kind": "cross", "src": "h2", "dst": "h3", "start_s": 0, "duration_s": 60,
                        "rate_mbit": 1}])
    net, clock = FakeNet(), Clock()
    inj = Injector(net, events, clock=clock)
    inj.start()
    inj.tick()
    inj.stop()
    assert net.procs[0].terminated


def test_failing_action_raises_with_what_was_tried(tmp_path):
    events = schedule([{"kind": "rate", "link": "l2-p1", "start_s": 0.0, "duration_s": 1, "fraction": 0.5}])
    inj = Injector(FakeNet(fail_on="l2-p1"), events, tmp_path / "a.jsonl", clock=Clock())
    inj.start()
    with pytest.raises(InjectorError, match="set_rate at t=0s failed: control socket gone"):
        inj.tick()
    inj.stop()
    assert "error" in (tmp_path / "a.jsonl").read_text()


def test_netem_support_says_why_not():
    assert netem_support(FakeNet(), probe=lambda: True) == (False, "the network has no netem control (set_link_netem)")

    class NetemNet(FakeNet):
        def set_link_netem(self, *a):
            pass

    assert netem_support(NetemNet(), probe=lambda: False) == (False, "no sch_netem on this kernel")
    assert netem_support(NetemNet(), probe=lambda: True) == (True, "")


class NetemNet(FakeNet):
    def set_link_netem(self, link, delay_ms, jitter_ms, loss_pct, **more):
        self.calls.append(("netem", link, delay_ms, jitter_ms, loss_pct, more))


@pytest.mark.parametrize("via", ["netem", "twin"])
def test_netem_applied_where_it_runs_and_the_record_says_how(tmp_path, via):
    events = schedule([{"kind": "netem", "host": "h3", "start_s": 0, "duration_s": 1, "delay_ms": 4,
                        "jitter_ms": 1, "distribution": "normal", "reorder_pct": 5, "loss_pct": 2}], via)
    net, clock = NetemNet(), Clock()
    inj = Injector(net, events, tmp_path / "applied.jsonl", clock=clock)
    inj.start()
    inj.tick()
    clock.t += 1
    inj.tick()
    more = {"distribution": "normal", "correlation_pct": 0.0, "reorder_pct": 5.0}
    assert net.calls == [("netem", "h3-l2", 4.0, 1.0, 2.0, more), ("netem", "h3-l2", None, 0.0, 0.0, {})]
    lines = [json.loads(x) for x in (tmp_path / "applied.jsonl").read_text().splitlines()]
    assert [(x["op"], x["via"]) for x in lines] == [("netem_start", via), ("netem_stop", via)]


def test_a_netem_fallback_is_recorded_as_such(tmp_path):
    events = schedule([{"kind": "netem", "host": "h3", "start_s": 0, "duration_s": 1, "delay_ms": 4},
                       {"kind": "rate", "link": "l1-p1", "start_s": 0.5, "duration_s": 1, "fraction": 0.5}])
    net, clock = NetemNet(), Clock()
    inj = Injector(net, events, tmp_path / "applied.jsonl", clock=clock)
    inj.start()
    for _ in range(3):
        inj.tick()
        clock.t += 1
    lines = [json.loads(x) for x in (tmp_path / "applied.jsonl").read_text().splitlines()]
    assert [(x["op"], x["link"], x.get("via")) for x in lines] == [
        ("set_rate", "h3-l2", "fallback"), ("set_rate", "l1-p1", None),
        ("set_rate", "h3-l2", "fallback"), ("set_rate", "l1-p1", None)]
    assert not [c for c in net.calls if c[0] == "netem"]


def test_schedule_file_is_never_overwritten(tmp_path):
    write_schedule(tmp_path / "jitter.jsonl", [{"id": 0}])
    with pytest.raises(FileExistsError):
        write_schedule(tmp_path / "jitter.jsonl", [{"id": 1}])


def test_blaster_paces_at_its_rate():
    """The blaster's pacing on a virtual clock: 1 Mbit/s of 1000-byte packets
    for 1 s is 125 packets."""
    t = [0.0]

    def clock():
        return t[0]

    def sleep(dt):
        t[0] += max(dt, 0.001)

    n = blaster.blast("127.0.0.1", 1.0, 1.0, 1000, False, port=9, clock=clock, sleep=sleep)
    assert n == 125


def test_blaster_sends_what_was_owed_when_its_last_tick_is_late():
    """A busy machine: one sleep of 0.3 s lands past the end of a 0.25 s run;
    the blaster still sends the run's 32 datagrams (1 Mbit/s, 1000 bytes)."""
    t = [0.0]
    n = blaster.blast("127.0.0.1", 1.0, 0.25, 1000, False, port=9, clock=lambda: t[0],
                      sleep=lambda dt: t.__setitem__(0, t[0] + 0.3))
    assert n == 32


def test_blaster_cli_rejects_bad_arguments():
    r = subprocess.run(["python3", "-m", "experiments.jitter.blaster", "--dst", "127.0.0.1", "--rate-mbit", "0",
                        "--duration", "1"], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
