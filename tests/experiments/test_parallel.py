"""A batch's runs on workers (experiments.parallel, issue 52 item 4): a
sweep's runs on the simulation target on worker processes (--jobs N, by
default one per core), or on a Dask cluster's workers (--workers ADDRESS,
a distributed.LocalCluster on 127.0.0.1 here), make the records, run
directories and summaries of the same batch run one run after another in
the runner's process (--jobs 1): every file byte for byte, meta.json but
its wall times; the prediction's figures on the cluster are those made
here.  A bad address is one line and exit 2, at once."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments import cli
from experiments import config as C
from experiments import workers as W
from experiments.sim import predict as SP
from tests.experiments.sim.test_predict import RAW
from tests.harness import REPO
from tests.harness.configs import TINY
from topologies.network.links import VIA_TWIN

distributed = pytest.importorskip("distributed", reason="make setup installs dask's distributed (pyproject.toml)")

# 2 points x 2 repeats x 2 variants: 8 runs of a second's simulation at most
SWEEP = (TINY.replace('name = "tiny"\n', 'name = "tiny"\nrepeats = 2\n')
         .replace('["baseline"]', '["baseline", "symphony"]') + '[sweep]\n"symphony.threshold" = [0, 2]\n')
WALL = ("started", "ended", "wall_s")                           # meta.json's: when and how long, not what
SIM_WALL = ("wall_s", "events_per_s", "frames_per_s")


def batch(root: Path, *flags: str) -> Path:
    """The sweep run through the command line, in this process; its
    experiment directory."""
    root.mkdir(parents=True, exist_ok=True)
    config = root / "c.toml"
    config.write_text(SWEEP)
    out = root / "out"
    code = cli.main(["run", str(config), "--target", "sim", "--sweep", "--no-sim", "--no-report", "--out", str(out),
                     *flags])
    assert code == 0
    return out / "tiny"


def records(exp: Path) -> dict[str, object]:
    """Every file of a batch by its path, the batch's stamp and root made
    one word; meta.json parsed, without its wall times."""
    stamp = next(exp.glob("*-sweep.json")).name.removesuffix("-sweep.json")
    out: dict[str, object] = {}
    for p in sorted(exp.rglob("*")):
        if not p.is_file():
            continue
        data = p.read_bytes().replace(stamp.encode(), b"STAMP").replace(str(exp).encode(), b"ROOT")
        if p.name == "meta.json":
            meta = json.loads(data)
            assert meta["status"] == "ok", meta
            data = {k: v for k, v in meta.items() if k not in WALL}
            data["sim"] = {k: v for k, v in meta["sim"].items() if k not in SIM_WALL}
        out[p.relative_to(exp).as_posix().replace(stamp, "STAMP")] = data
    return out


@pytest.fixture(scope="module")
def serial(tmp_path_factory) -> dict[str, object]:
    recs = records(batch(tmp_path_factory.mktemp("serial"), "--jobs", "1"))
    assert sum(1 for k in recs if k.endswith("/meta.json")) == 8
    return recs


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes of one thread each, everything on 127.0.0.1."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as lc:
        yield lc


def test_a_sweep_on_worker_processes_makes_the_serial_batchs_records(serial, tmp_path, monkeypatch):
    pools = []
    pool = W.process_pool

    def spy(n, *rest):
        pools.append(n)
        return pool(n, *rest)
    monkeypatch.setattr(W, "process_pool", spy)
    exp = batch(tmp_path, "--jobs", "2")
    assert pools == [2]             # both points' 8 runs on one pool of two
    assert records(exp) == serial


def test_a_sweep_on_a_dask_cluster_makes_the_serial_batchs_records(serial, cluster, tmp_path):
    exp = batch(tmp_path, "--workers", cluster.scheduler_address)
    assert "run_away" in cluster.scheduler.task_prefixes        # the runs ran there
    assert records(exp) == serial


def test_the_prediction_on_a_dask_cluster_gives_the_figures_made_here(cluster, tmp_path):
    spec = C.resolve(json.loads(json.dumps(RAW)))
    here = SP.predict(spec, [1], VIA_TWIN, tmp_path / "here", workers=1, coarse=64)
    with W.using(address=cluster.scheduler_address):
        there = SP.predict(spec, [1], VIA_TWIN, tmp_path / "there", coarse=64)
    assert "simulate" in cluster.scheduler.task_prefixes
    assert there["scales"] == here["scales"]
    # cached here, by this process: a worker elsewhere need not see --out
    assert sorted(p.name for p in (tmp_path / "there").glob("*.json")) == sorted(
        p.name for p in (tmp_path / "here").glob("*.json"))


def test_local_workers_are_one_per_core_unless_told():
    assert W.local_jobs(1000) == (os.cpu_count() or 1)
    with W.using(jobs=3):
        assert W.local_jobs(1000) == 3 and W.local_jobs(2) == 2
    with W.using(jobs=1):
        assert W.local_jobs(1000) == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("flags, message", [
    (["--workers", f"tcp://127.0.0.1:{_closed_port()}"], "no Dask scheduler answered"),
    (["--workers", "tcp://127.0.0.1:notaport"], "not a Dask scheduler's address"),
    (["--jobs", "0"], "argument --jobs: give a number of worker processes"),
    (["--jobs", "2", "--workers", "tcp://127.0.0.1:8786"], "not allowed with argument"),
], ids=["nothing-there", "no-port", "no-jobs", "both"])
def test_a_bad_address_or_count_is_one_line_and_exit_2(tmp_path, flags, message):
    config = tmp_path / "c.toml"
    config.write_text(TINY)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(config), "--target", "sim", "--out",
                        str(tmp_path / "out"), *flags], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr
    assert time.monotonic() - t0 < 15        # the connection's 3 s and the imports, not a hang
    assert not (tmp_path / "out").exists()   # refused before the batch claimed anything
