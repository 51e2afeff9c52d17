"""The speed bench's --until: a run cut at a virtual time carries the same
frames and events every time (what makes two builds comparable on a few
seconds of CPU), and a time that is not a positive number is refused in one
line."""

from __future__ import annotations

import json

import pytest

from experiments.bench import sim_speed


def _until(tmp_path, s: float, name: str) -> dict:
    out = tmp_path / f"{name}.json"
    assert sim_speed.main(["--until", str(s), "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_until_cuts_the_run_at_the_same_frames_every_time(tmp_path):
    a, b = _until(tmp_path, 0.02, "a"), _until(tmp_path, 0.02, "b")
    longer = _until(tmp_path, 0.04, "longer")
    assert 0 < a["virtual_s"] <= 0.02
    assert (a["frames"], a["events"]) == (b["frames"], b["events"])
    assert longer["frames"] > a["frames"]


@pytest.mark.parametrize("bad", ["0", "-1", "soon", "inf", "nan"])
def test_until_refuses_what_is_no_time(bad, capsys):
    with pytest.raises(SystemExit) as e:
        sim_speed.main(["--until", bad])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(f"give the virtual time to simulate, a number of seconds above 0, got {bad}")
