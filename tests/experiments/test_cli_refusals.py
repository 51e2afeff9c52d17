"""What the commands refuse before anything starts, each with one line and
exit 2 (issue 18, items 6 and 7): a config that is not UTF-8, an --out that
cannot be written, a name no directory can have, and every config that
would fail every run; `check` and `run` refuse them alike.  And the
commands that run no network load nothing of it (`model` answers at once)."""

import subprocess
import sys

import pytest

from contract import exits
from experiments import cli
from hosts.job import agent_memory_bytes
from tests.harness import REPO
from tests.harness.mounts import tmpfs

BASE = '[topology]\nkind = "star"\nhosts = 2\nhost_rate_mbit = 10\n' \
       '[[jobs]]\nranks = 2\nmessage_bytes = 4000\niterations = 1\n'


def run_cli(args, capsys) -> tuple[int, list[str], str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, err.strip().splitlines(), out


def test_a_config_that_is_not_utf8_is_one_line(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_bytes(BASE.encode() + b'name = "caf\xe9"\n')
    for command in ("check", "run", "model"):
        code, err, _ = run_cli([command, path], capsys)
        offset = len(BASE) + len('name = "caf')
        assert code == exits.USAGE and err == [f"config error: {path}: not UTF-8 text (byte 0xe9 at offset {offset})"]


def test_a_name_longer_than_a_directory_name_is_refused_by_check(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(f'name = "{"n" * 256}"\n' + BASE)
    code, err, _ = run_cli(["check", path], capsys)
    assert code == exits.USAGE
    assert err == ["config error: name: 256 bytes long, at most 255: it names a directory (results/<name>/)"]
    path.write_text(f'name = "{"n" * 255}"\n' + BASE)
    assert run_cli(["check", path], capsys)[0] == exits.OK


# what used to pass `check` and then fail every run (exit 3)
FAILS_EVERY_RUN = [
    ("[dcqcn]\nbogus = 1\n", "config error: dcqcn parameter 'bogus' is unknown"),
    ('[dcqcn]\npreset = "off"\nbogus = 1\n', "config error: dcqcn parameter 'bogus' is unknown"),
    ("[dcqcn]\nr_ai_mbit = nan\n", "config error: dcqcn parameter 'r_ai_mbit' must be a number, got nan"),
    ("[dcqcn]\nr_ai_mbit = -1.0\n", "config error: dcqcn parameter 'r_ai_bps' must be a finite number >= 0"),
    ("[dcqcn]\nline_rate_mbit = inf\n", "config error: dcqcn.line_rate_mbit: inf outside"),
    ("[jobs.udp]\nbogus = 1\n", "config error: jobs[0].udp.bogus: unknown field"),
    ("[jobs.udp]\nrto_ms = -5\n", "config error: jobs[0].udp.rto_ms: -5 outside 1..60000"),
    ("[jobs.deadlines]\nstep_s = nan\n", "config error: jobs[0].deadlines.step_s: expected a number, got nan"),
    ("[jobs.deadlines]\nrun_s = inf\n", "config error: jobs[0].deadlines.run_s: inf outside"),
    # the depth is derived (the config gives none): the line says so, and how to fix it
    ("[symphony]\nk_sym = 55\n", "config error: symphony.k_sym: 55 exceeds the queue depth derived for this "
                                 "network (54 packets, the deployment's queue per ECN kmax): no queue reaches it, "
                                 "so Symphony would never mark: lower k_sym or set topology.queue_depth_pkts to at "
                                 "least 55"),
]


@pytest.mark.parametrize("extra, line", FAILS_EVERY_RUN)
def test_check_and_run_refuse_what_would_fail_every_run(tmp_path, capsys, extra, line):
    path = tmp_path / "c.toml"
    path.write_text(BASE + extra)
    for command in ("check", "run"):
        code, err, out = run_cli([command, path], capsys)
        assert code == exits.USAGE and len(err) == 1 and err[0].startswith(line), (command, err)
        assert out == ""


def test_a_message_beyond_what_the_testbed_carries(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(BASE.replace("message_bytes = 4000", f"message_bytes = {2**40 + 4}"))
    for command in ("check", "run"):
        code, err, _ = run_cli([command, path], capsys)
        assert code == exits.USAGE and err == [
            "config error: jobs[0].message_bytes: 1099511627780 outside 8..1099511627776"], err


def test_a_link_the_emulation_cannot_carry_is_the_simulations(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(BASE.replace("host_rate_mbit = 10", "host_rate_mbit = 1e7"))
    code, err, _ = run_cli(["run", path, "--target", "soft"], capsys)
    assert code == exits.USAGE and len(err) == 1 and err[0].startswith(
        "config error: topology.host_rate_mbit: at most 1000 Mbit/s, got 10000000.0: the emulation cannot carry more")
    assert err[0].endswith("--target sim can")
    code, err, out = run_cli(["check", path], capsys)
    assert code == exits.OK and out.startswith('name = "c"')
    assert err[0].startswith("note: targets: sim; not the emulation: topology.host_rate_mbit: at most 1000 Mbit/s")


def test_a_message_the_machine_cannot_hold_is_refused(tmp_path, capsys):
    # 4 agents of 2^31 bytes each hold about (4 + 2 + 0.5) x 2 GiB: 56 GB, more than a test machine has free
    path = tmp_path / "c.toml"
    path.write_text(BASE.replace("message_bytes = 4000", f"message_bytes = {2**31}")
                    .replace("hosts = 2", "hosts = 4").replace("ranks = 2", "ranks = 4"))
    code, err, _ = run_cli(["check", path], capsys)
    if code == exits.OK:
        pytest.skip("this machine has the memory for it")
    assert code == exits.USAGE and len(err) == 1
    each = agent_memory_bytes(4, 2**31)         # the model the refusal quotes: about 14 GB
    assert 13.9e9 < each < 14.1e9
    assert err[0].startswith("config error: jobs[0].message_bytes: the run's agents would need "
                             f"{4 * each / 1e9:.2f} GB of memory at once (4 agents of {each / 1e9:.2f} GB in job 1:")
    assert err[0].endswith("available")
    assert run_cli(["model", path, "--no-sim"], capsys)[0] == exits.OK      # the model runs no agent


@pytest.mark.root
@pytest.mark.parametrize("where", ["file", "read-only"])      # /proc: a system directory (below)
def test_an_out_that_cannot_be_written_is_one_line(tmp_path, capsys, where):
    cfg = tmp_path / "c.toml"
    cfg.write_text(BASE)
    if where == "file":
        out = tmp_path / "results"
        out.write_text("")
        why = "Not a directory"
    if where != "read-only":
        code, err, _ = run_cli(["run", cfg, "--target", "soft", "--out", out], capsys)
        assert code == exits.USAGE and len(err) == 1 and err[0].startswith(f"--out {out}: cannot write there ({why}")
        return
    with tmpfs(tmp_path / "ro", read_only=True) as ro:
        code, err, _ = run_cli(["run", cfg, "--target", "soft", "--out", ro], capsys)
    assert code == exits.USAGE and err == [f"--out {ro}: cannot write there (Read-only file system: {ro}/c)"]


def test_model_and_check_import_neither_mininet_nor_matplotlib():
    """`model` answers in well under a second: the dispatcher loads only the
    chosen command (experiments/cli.py), and neither command needs the
    network, the runner or the plots."""
    probe = ("import sys, experiments.cli, experiments.cli_model, experiments.cli_check; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'mininet', 'matplotlib', 'tqdm'}), "
             "'experiments.runner' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["[]", "False"], r.stdout + r.stderr


# --- issue 49, item 6 -------------------------------------------------------------------

def test_a_config_nested_past_any_sane_depth_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(BASE + "x = " + "[" * 5000 + "]" * 5000 + "\n")     # a RecursionError's traceback, exit 1, before
    for command in ("check", "run", "model"):
        code, err, out = run_cli([command, path], capsys)
        assert code == exits.USAGE and err == [f"config error: {path}: arrays or inline tables nested deeper than "
                                               "the TOML parser follows (a config nests at most 16 levels)"], command
        assert out == ""


def test_a_derived_value_that_moved_is_a_note_and_check_goes_on(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(BASE + "[ecn]\nkmax = 1\n")          # below the derived kmin (issue 49: it was refused)
    code, err, out = run_cli(["check", path], capsys)
    assert code == exits.OK and "kmin = 1" in out
    moved = [line for line in err if line.startswith("note: ecn.kmin: 1 packets, ecn.kmax's")]
    assert len(moved) == 1 and "out of the deployment's regime" in moved[0]


@pytest.mark.parametrize("link_to", ["/proc", "/sys/kernel"])
def test_an_out_in_a_system_directory_is_refused_named_or_through_a_symlink(tmp_path, capsys, link_to):
    path = tmp_path / "c.toml"
    path.write_text(BASE)
    link = tmp_path / "results"
    link.symlink_to(link_to)
    for out, line in ((link, f"--out {link} (it resolves to {link_to}): inside the system directory "),
                      (f"{link_to}/x", f"--out {link_to}/x: inside the system directory ")):
        for command in (["run", "--target", "sim"], ["check"], ["model", "--no-sim"]):
            code, err, stdout = run_cli([*command, path, "--out", out], capsys)
            assert code == exits.USAGE and len(err) == 1 and err[0].startswith(line), (command, err)
            assert err[0].endswith(", where the testbed makes no directory: give one of your own") and not stdout


def test_the_runner_says_once_where_the_resolved_out_is(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('name = "c"\n' + BASE)
    (tmp_path / "real").mkdir()
    link = tmp_path / "results"
    link.symlink_to(tmp_path / "real")
    code, err, _ = run_cli(["run", path, "--target", "sim", "--no-sim", "--no-report", "--out", link], capsys)
    assert code != exits.USAGE, err             # (how its run ends is the simulation's to say)
    said = [line for line in err if "--out" in line]
    assert said == [f"note: --out {tmp_path / 'real'}: the batch writes under {tmp_path / 'real' / 'c'}"]
    assert (tmp_path / "real" / "c" / "summary.json").is_file()
