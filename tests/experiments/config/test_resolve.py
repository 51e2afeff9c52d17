"""Resolving a config: defaults filled, jobs placed, every bad key named in
one line, the switches' and the job files' limits checked before any run."""

import pytest

from experiments import config as C
from experiments.config.derive import queue_depth
from experiments.config.machine import emulation_refusal
from experiments.config.schema import MAX_NESTING
from tests.harness import REPO
from topologies.spec.topo import TopoParams
from topologies.switch.params import EcnParams, SymphonyParams

CONFIGS = sorted((REPO / "experiments" / "configs").glob("*.toml"))


def test_defaults_are_filled_and_hosts_placed(base):
    cfg = C.resolve(base).as_dict()
    assert cfg["variants"] == ["baseline", "symphony"]
    assert cfg["repeats"] == 1 and cfg["seed"] == 1
    # ECN and queue derived from the deployment (3.2 and 12.8 bandwidth-delay
    # products, a queue of twice Kmax): 20 Mbit/s, the longest ring edge h1 ->
    # h3 crosses 4 links, a 1462-byte frame out and a 64-byte ACK back take
    # 4 x (0.5848 + 0.0256) ms = 2.442 ms, a BDP of 6105 bytes = 4.18 frames
    assert cfg["ecn"] == {"kmin": 13, "kmax": 53, "pmax": 0.2}
    assert cfg["topology"]["queue_depth_pkts"] == 106
    assert cfg["symphony"] == {"threshold": 1, "k_sym": 1, "p_sym": 1.0, "gate_step": 0.0, "track": "path"}
    job = cfg["jobs"][0]
    # interleaved over the two leaves by the topology builder's placement
    assert job["hosts"] == ["h1", "h3", "h2", "h4"]
    assert "placement" not in job
    assert job["transport"] == "udp" and job["data_port"] == 5000 and job["job"] == 1


@pytest.mark.parametrize("mutate, key", [
    (lambda r: r["topology"].pop("kind"), "topology.kind"),
    (lambda r: r.pop("topology"), "topology"),
    (lambda r: r["jobs"][0].pop("message_bytes"), "jobs[0].message_bytes"),
    (lambda r: r["topology"].update(hosts="four"), "topology.hosts"),
    (lambda r: r["topology"].update(kind="torus"), "topology.kind"),
    (lambda r: r["topology"].update(host_rate_mbit=True), "topology.host_rate_mbit"),
    (lambda r: r["jobs"][0].update(iterations=1.5), "jobs[0].iterations"),
    (lambda r: r["jobs"][0].update(transport="quic"), "jobs[0].transport"),
    (lambda r: r["jobs"][0].update(message_bytes=10), "jobs[0].message_bytes"),
    (lambda r: r["jobs"][0].update(ranks=9), "jobs[0].ranks"),
    (lambda r: r["jobs"][0].update(hosts=["h1", "h9", "h2", "h3"]), "jobs[0].hosts"),
    (lambda r: r.update(variants=["baseline", "fast"]), "variants[1]"),
    (lambda r: r.update(ecn={"kmin": 30, "kmax": 10}), "ecn.kmax"),
    (lambda r: r.update(symphony={"p_sym": 2}), "symphony.p_sym"),
    (lambda r: r.update(symphony={"gate_step": -0.1}), "symphony.gate_step"),
    (lambda r: r.update(symphony={"gate_step": 1.5}), "symphony.gate_step"),
    (lambda r: r.update(symphony={"gate_pkts": 64}), "symphony.gate_pkts"),     # derived, not a key
    (lambda r: r.update(symphony={"track": "spines"}), "symphony.track"),
    (lambda r: r.update(symphony={"track": 1}), "symphony.track"),
    (lambda r: r.update(ecn={"frame_packets": 8}), "ecn.frame_packets"),       # the scaling's, not a key
    (lambda r: r.update(colour="blue"), "colour"),
    (lambda r: r["topology"].update(spine=1), "topology.spine"),
    (lambda r: r.update(jitter=[{"kind": "rate", "start_s": 0, "duration_s": 1}]), "jitter[0]"),
    (lambda r: r.update(jitter=[{"kind": "wobble"}]), "jitter[0].kind"),
    (lambda r: r.update(jitter=[{"kind": "rate", "link": "h1-s9", "start_s": 0, "duration_s": 1,
                                 "fraction": 0.5}]), "jitter[0].link"),
    (lambda r: r.update(jitter=[{"kind": "rate", "rank": 7, "start_s": 0, "duration_s": 1,
                                 "fraction": 0.5}]), "jitter[0].rank"),
    (lambda r: r.update(jitter=[{"kind": "rate", "rank": 1, "start_s": [2, 1], "duration_s": 1,
                                 "fraction": 0.5}]), "jitter[0].start_s"),
    (lambda r: r.update(jitter=[{"kind": "compute", "rank": 1, "iter": 5, "delay_s": 1}]), "jitter[0].iter"),
    (lambda r: r.update(jitter=[{"kind": "cross", "src": "h1", "dst": "h1", "start_s": 0, "duration_s": 1,
                                 "rate_mbit": 5}]), "jitter[0].dst"),
    (lambda r: r.update(sweep={"symphony.thresh": [1, 2]}), "sweep.symphony.thresh"),
    (lambda r: r.update(dcqcn={"preset": "fastest"}), "dcqcn.preset"),
    # the switches' 6-bit DSCP tag orders steps less than 32 apart (topologies.switch.controlplane.check_job)
    (lambda r: r["jobs"][0].update(transport="tcp") or r.update(symphony={"threshold": 32}), "jobs[0]"),
])
def test_bad_config_names_the_key(base, mutate, key):
    raw = base
    mutate(raw)
    with pytest.raises(C.ConfigError) as err:
        C.resolve(raw)
    msg = str(err.value)
    assert msg.startswith(key + ":") or msg.startswith(key + " ") or msg.startswith(key), msg
    assert "\n" not in msg


def test_tcp_job_over_32_ranks_refused_before_any_network(base):
    raw = base
    raw["topology"] = {"kind": "star", "hosts": 33, "host_rate_mbit": 10}
    raw["jobs"][0].update(ranks=33, transport="tcp")
    with pytest.raises(C.ConfigError, match=r"^jobs\[0\]: job 1: transport tcp .* at most 32 ranks, got 33$"):
        C.resolve(raw)
    raw["jobs"][0].update(transport="udp")
    assert len(C.resolve(raw).jobs[0].hosts) == 33


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_shipped_configs_load(path):
    cfg = C.load(path)
    assert cfg.jobs and cfg.variants
    if cfg.sweep:
        points = C.sweep_points(C.load_raw(path), str(path))
        assert len(points) >= 2
        assert len({label for label, _ in points}) == len(points)


def test_shipped_configs_include_demo_ci_sweep():
    names = {p.stem for p in CONFIGS}
    # the demo (make demo: the victim scenario) and the example where Symphony cannot help
    assert {"victim_straggle8", "nohelp_access_squeeze", "ci4"} <= names
    assert any(C.load(p).sweep for p in CONFIGS)


def test_unreadable_and_invalid_toml(tmp_path):
    with pytest.raises(C.ConfigError, match="cannot read"):
        C.load(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("topology = [\n")
    with pytest.raises(C.ConfigError, match="not valid TOML"):
        C.load(bad)


def test_defaults_are_the_typed_specs_or_derived(base):
    spec = C.resolve(base)
    assert spec.symphony == SymphonyParams() and spec.ecn.pmax == EcnParams().pmax
    # the thresholds and the queue depth derived (test_defaults_are_filled_and_hosts_placed), the rest TopoParams'
    assert spec.topology == TopoParams(kind="leafspine", hosts=4, host_rate_mbit=20.0, fabric_rate_mbit=20.0,
                                       queue_depth_pkts=106)
    base["ecn"] = {"kmin": 5}                    # a threshold given is kept, the other derived
    base["topology"]["queue_depth_pkts"] = 64
    spec = C.resolve(base)
    assert (spec.ecn.kmin, spec.ecn.kmax, spec.topology.queue_depth_pkts) == (5, 53, 64)


@pytest.mark.parametrize("mutate, message", [
    # the job file's own checks (hosts.job), named by the config's key
    (lambda r: r["jobs"][0].update(udp={"window_packets": 0}), r"^jobs\[0\]\.udp\.window_packets: "),
    (lambda r: r["jobs"][0].update(deadlines={"step": 1}), r"^jobs\[0\]\.deadlines\.step: "),
    (lambda r: r.update(dcqcn={"preset": "paper", "no_such_field": 1}), r"^dcqcn"),
    (lambda r: r.update(dcqcn={"preset": "off", "no_such_field": 1}), r"^dcqcn parameter 'no_such_field'"),
    # what the switches and links can do
    (lambda r: r.update(symphony={"track": "spines"}),
     r"^symphony\.track: unknown track 'spines' \(known: path, leaves, groups, verdict\)$"),
    (lambda r: r["topology"].update(hosts=8, leaves=2, spines=3, routing="ecmp")
     or r.update(symphony={"track": "groups"}),
     r"^symphony\.track groups: switch l1 spreads over 3 equal-cost ports, and a job's flows keep their spine "
     r"groups from step to step only over a power-of-two count$"),
    (lambda r: r.update(symphony={"k_sym": 107}),
     r"^symphony\.k_sym: 107 exceeds the queue depth derived for this network \(106 packets, .*: lower k_sym or set "
     r"topology\.queue_depth_pkts to at least 107$"),
    (lambda r: r["topology"].update(queue_depth_pkts=20) or r.update(ecn={"kmax": 20}, symphony={"k_sym": 21}),
     r"^symphony\.k_sym: 21 exceeds topology\.queue_depth_pkts \(20\): no queue reaches it, so Symphony would never "
     r"mark$"),
    # the gate's register counts to 65,535: a whole step, a 105 MB chunk, is 75,000 packets of 1,400 bytes
    (lambda r: r["jobs"][0].update(message_bytes=420_000_000) or r.update(symphony={"gate_step": 1.0}),
     r"^symphony\.gate_step: 1 of the scenario's step is 75000 packets, more than the gate's register counts"),
    (lambda r: r.update(name="x" * 256), r"^name: 256 bytes long, at most 255"),
    # placement's: two jobs cannot share data or control ports
    (lambda r: r["jobs"].append({"ranks": 2, "message_bytes": 800, "iterations": 1, "data_port": 5001}),
     r"^jobs\[1\]\.data_port: "),
])
def test_what_every_run_would_refuse_is_refused_here(base, mutate, message):
    mutate(base)
    with pytest.raises(C.ConfigError, match=message) as err:
        C.resolve(base)
    assert "\n" not in str(err.value)


def test_a_sweep_point_label_must_be_a_directory_name(base):
    """A point's label names its directory: at most 255 bytes, refused
    before anything runs."""
    base["sweep"] = {"symphony.threshold": [1, 2]}
    assert [label for label, _ in C.sweep_points(base)] == ["threshold1", "threshold2"]
    base["sweep"] = {"jobs.0.message_bytes": [4 * 10**250]}
    with pytest.raises(C.ConfigError, match=r"^sweep: a point's label: 264 bytes long, at most 255: it names a "):
        C.sweep_points(base)


def test_links_faster_than_the_emulation_carries_are_the_simulations_only(base):
    assert emulation_refusal(C.resolve(base)) is None
    base["topology"]["fabric_rate_mbit"] = 2000
    why = emulation_refusal(C.resolve(base))
    assert why.startswith("topology.fabric_rate_mbit: at most 1000 Mbit/s, got 2000.0") and why.endswith("can")


# --- a derived value against one the config gives (issue 49, item 6) ----------------

def test_a_queue_depth_below_the_derived_kmax_names_both_sides_and_both_fixes(base):
    derived = C.resolve(base)       # the derivation's own: Kmax 53 and a queue of 106 (above)
    kmax, depth = derived.ecn.kmax, derived.topology.queue_depth_pkts
    base["topology"]["queue_depth_pkts"] = kmax - 13
    with pytest.raises(C.ConfigError) as err:
        C.resolve(base)
    line = str(err.value)
    # about the key the config gives, never one it does not (ecn.kmax)
    assert line.startswith(f"topology.queue_depth_pkts: {kmax - 13} packets cannot hold the ECN kmax derived for "
                           f"this network ({kmax} packets, the deployment's 12.8 bandwidth-delay products at 20 Mbit/s "
                           "and a 2.44 ms base RTT, the longest of a ring edge)")
    assert f"raise queue_depth_pkts to at least {kmax} ({depth} keeps the deployment's queue per kmax)" in line
    assert f"or set [ecn] kmax to at most {kmax - 13}" in line and "\n" not in line
    # either fix is taken as it says
    assert C.resolve({**base, "ecn": {"kmax": kmax - 13}}).ecn.kmax == kmax - 13
    base["topology"]["queue_depth_pkts"] = kmax
    assert C.resolve(base).ecn.kmax == kmax


def test_a_kmax_given_below_the_derived_kmin_takes_kmin_down_and_says_so(base):
    kmin = C.resolve(base).ecn.kmin        # 13: 3.2 bandwidth-delay products of 4.18 frames
    base["ecn"] = {"kmax": kmin - 3}
    spec = C.resolve(base)
    assert (spec.ecn.kmin, spec.ecn.kmax) == (kmin - 3, kmin - 3)
    note, = spec.notes
    assert note.startswith(f"ecn.kmin: {kmin - 3} packets, ecn.kmax's, below the kmin derived for this network "
                           f"({kmin} packets)")
    assert "within the regime verdict's factor 2" in note      # 10 of 13.4: 0.75 of the deployment's
    base["ecn"] = {"kmax": 5}
    assert C.resolve(base).notes[0].endswith("beyond the regime verdict's factor 2: out of the deployment's regime")
    assert C.resolve({**base, "ecn": {"kmin": 5, "kmax": 5}}).notes == ()      # both given: nothing derived moved


def test_a_kmin_given_above_the_derived_kmax_deepens_the_derived_queue(base):
    base["ecn"] = {"kmin": 200}
    spec = C.resolve(base)
    assert (spec.ecn.kmin, spec.ecn.kmax, spec.topology.queue_depth_pkts) == (200, 200, queue_depth(200))
    assert spec.topo.queue_depth == queue_depth(200)            # the network is built with it
    kmax_note, depth_note = spec.notes
    assert kmax_note.startswith("ecn.kmax: 200 packets, ecn.kmin's, above the kmax derived for this network (53 ")
    assert depth_note.startswith(f"topology.queue_depth_pkts: {queue_depth(200)} packets, the deployment's queue per "
                                 "kmax for ecn.kmin 200, deeper than the 106 derived for this network")
    # a depth the config gives is kept: then the config's own two keys disagree
    base["topology"]["queue_depth_pkts"] = 150
    with pytest.raises(C.ConfigError, match=r"^ecn\.kmin: 200 exceeds topology\.queue_depth_pkts \(150\)$"):
        C.resolve(base)


# --- a config no TOML parser or check should walk (issue 49, item 6) ----------------

def test_a_config_nested_past_any_sane_depth_is_one_line(tmp_path):
    cases = {"parser": "x = " + "[" * 5000 + "]" * 5000,               # past the parser's recursion
             "walk": "x = " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1),
             "dotted": "a" + ".a" * 5000 + " = 1",                    # the parser takes it; no config nests so
             "integer": "x = 1" + "0" * 5000}                          # past what Python converts
    for what, text in cases.items():
        path = tmp_path / f"{what}.toml"
        path.write_text(text + "\n")
        with pytest.raises(C.ConfigError) as err:
            C.load_raw(path)
        assert "\n" not in str(err.value), what
    # as deep as MAX_NESTING is still a document
    ok = tmp_path / "ok.toml"
    ok.write_text("x = " + "[" * MAX_NESTING + "]" * MAX_NESTING + "\n")
    assert isinstance(C.load_raw(ok)["x"], list)
