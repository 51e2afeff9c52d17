"""experiments.bench.ecmp's frontier walk: a spine's step_count and frontier
over a job's steps, from the arrivals its routes give it."""

from experiments.bench.ecmp import frontier_walk


def test_every_flow_every_step_completes_each():
    assert frontier_walk([3] * 10, 3) == {"completed": 10, "stalled": 0, "jumps": 0}


def test_fewer_arrivals_than_n_local_stall_until_the_slot_is_reused():
    walk = frontier_walk([1] * 130, 3)          # a slot of W = 64 reused: steps k, k+64, k+128 fill it
    assert walk["completed"] == 2 and walk["stalled"] == 128 and walk["jumps"] == 1   # -1 -> 128, then 129
