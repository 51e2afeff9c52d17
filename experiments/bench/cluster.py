"""A busy cluster as a config: a 2:1 oversubscribed leaf-spine of N hosts
(32 hosts a leaf at 1,024, 8 spines) carrying 16 jobs of 16 to 64 ranks
(64: the most a job may have, the P4 program's step window W),
placed as a cluster's scheduler leaves them after a while of jobs coming
and going (each job on blocks of 4 hosts wherever blocks are free, so
most rings cross the fabric and share spine links with other jobs), a
quarter of the jobs with a straggler in their first iteration.  Smaller N
keeps the shape (a leaf of N/2 hosts up to 32, the jobs' sizes in
proportion), so the simulation's cost can be read from 16 hosts to 1,024.
Pure: the config dict experiments.config.resolve takes."""

from __future__ import annotations

import random

# at 1,024 hosts: 864 ranks, the rest of the cluster idle
JOB_RANKS = (64,) * 12 + (32, 32, 16, 16)
BLOCK = 4                    # hosts a scheduler hands out together
HOST_RATE_MBIT = 100         # the config's units; --deployment runs them at 100 Gbit/s
CHUNK_BYTES = 125_000        # a step's chunk: 10 ms at the config's host rate
STRAGGLE_S = 0.05            # five steps late


def shape(hosts: int) -> tuple[int, int, float]:
    """(hosts per leaf, spines, fabric link rate in Mbit/s): 2:1 oversubscribed."""
    per_leaf = min(32, hosts // 2)
    spines = max(1, min(8, per_leaf // 4))
    return per_leaf, spines, HOST_RATE_MBIT * per_leaf / (2 * spines)


def job_sizes(hosts: int) -> list[int]:
    """The 1,024-host cluster's jobs in proportion to `hosts`, at least 2
    ranks each, as many as fit."""
    sizes, left = [], hosts
    for r in JOB_RANKS:
        n = max(2, round(r * hosts / 1024))
        if n <= left:
            sizes.append(n)
            left -= n
    return sizes


def placements(hosts: int, sizes: list[int], rng: random.Random) -> list[list[str]]:
    """Each job's hosts in ring order: blocks of BLOCK hosts drawn from the
    free ones in the scheduler's (shuffled) order."""
    blocks = [list(range(b, min(b + BLOCK, hosts))) for b in range(0, hosts, BLOCK)]
    rng.shuffle(blocks)
    free = [h for b in blocks for h in b]
    out = []
    for n in sizes:
        out.append([f"h{h + 1}" for h in free[:n]])
        free = free[n:]
    return out


def cluster(hosts: int = 1024, seed: int = 1, iterations: int = 1) -> dict:
    per_leaf, spines, fabric = shape(hosts)
    rng = random.Random(seed)
    sizes = job_sizes(hosts)
    jobs = [{"ranks": n, "hosts": placed, "message_bytes": CHUNK_BYTES * n, "iterations": iterations}
            for n, placed in zip(sizes, placements(hosts, sizes, rng), strict=True)]
    jitter = [{"kind": "compute", "job": j + 1, "rank": "random", "iter": 0, "delay_s": STRAGGLE_S}
              for j in range(0, len(jobs), 4)]
    return {"name": f"cluster{hosts}", "seed": seed, "repeats": 1,
            "topology": {"kind": "leafspine", "hosts": hosts, "leaves": hosts // per_leaf, "spines": spines,
                         "host_rate_mbit": HOST_RATE_MBIT, "fabric_rate_mbit": fabric},
            "jobs": jobs, "jitter": jitter}
