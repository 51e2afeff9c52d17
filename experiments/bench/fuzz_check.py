"""`check` against mutated shipped configs (issue 24):

    python3 -m experiments.bench.fuzz_check [--n 500] [--seed 0] [--run K] [--run-budget-s 20] [--json]

Sample i takes a shipped config (experiments/configs/*.toml) and changes one
to three things of it, as a careless or hostile user would (``mutant``): a
number scaled to an extreme, a value of the wrong type, a key removed, a
link made slow or given a delay, a netem loss, a straggler, a deadline, a
part of it of another shape (``retype``: a table for a number, an array of
tables for a table, a date, a deep nest, a key of an odd name).  `check`
runs on it in this process.  The property: `check` refuses it with exit 2
and one line on stderr, or accepts it (exit 0, the resolved config
as TOML on stdout, nothing but warnings and notes on stderr) and, unless it warned
that a run may fail (a deadline close to the ideal), a run of it then ends
ok.  --run K (root): up to K accepted samples without a warning, with a
mutation of time (a slow link, a delay, a loss, a straggler, a deadline),
whose run is expected to take at most --run-budget-s (experiments.feasible),
are run for real (`experiments run`, soft target, one repeat, the baseline
variant) and must exit 0.

Prints how many were sampled, refused (by kind, and by the key the refusal
names), accepted (and warned about), run and ok, and every violation
(--json: the same as one document); exit 1 when there was a violation.
The suite runs a short sample of the same (tests/experiments/test_fuzz_check.py).
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import io
import json
import random
import re
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from contract import exits
from experiments import cli, feasible
from experiments import config as C

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "experiments" / "configs").glob("*.toml"))
EXTREMES = (0, -1, 1e-9, 0.001, 1e6, 1e12, float("nan"), float("inf"), "x", True, [], {})
FACTORS = (0, 1e-4, 0.01, 0.1, 10, 100, 1e4)
RUN_TIMEOUT_S = 300


# --- mutations: each changes raw in place and says what it did ----------------------

def _leaves(node, path=()):
    """(path, value) of every scalar in a parsed TOML document."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        if isinstance(value, dict | list):
            yield from _leaves(value, (*path, key))
        else:
            yield (*path, key), value


def _set(raw: dict, path: tuple, value) -> None:
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _dotted(path: tuple) -> str:
    return ".".join(str(k) for k in path)


def scale(raw: dict, rng: random.Random) -> str:
    numbers = [(p, v) for p, v in _leaves(raw) if isinstance(v, int | float) and not isinstance(v, bool)]
    if not numbers:
        return "nothing to scale"
    path, value = rng.choice(numbers)
    new = value * rng.choice(FACTORS)
    new = int(new) if isinstance(value, int) and abs(new) < 2**63 else float(new)
    _set(raw, path, new)
    return f"{_dotted(path)} = {new!r}"


def replace_value(raw: dict, rng: random.Random) -> str:
    path, _ = rng.choice(list(_leaves(raw)))
    new = copy.deepcopy(rng.choice(EXTREMES))
    _set(raw, path, new)
    return f"{_dotted(path)} = {new!r}"


def drop(raw: dict, rng: random.Random) -> str:
    path, _ = rng.choice(list(_leaves(raw)))
    node = raw
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return f"{_dotted(path)} removed"


def slow_link(raw: dict, rng: random.Random) -> str:
    key = rng.choice(("host_rate_mbit", "fabric_rate_mbit"))
    raw.setdefault("topology", {})[key] = rng.choice((0.001, 0.01, 0.1, 1.0))
    return f"topology.{key} = {raw['topology'][key]}"


def link_delay(raw: dict, rng: random.Random) -> str:
    key = rng.choice(("host_delay_ms", "fabric_delay_ms"))
    raw.setdefault("topology", {})[key] = rng.choice((1.0, 50.0, 1000.0, 5000.0))
    return f"topology.{key} = {raw['topology'][key]}"


def loss(raw: dict, rng: random.Random) -> str:
    entry = {"kind": "netem", "pick": rng.choice(("access", "fabric", "any")), "start_s": rng.choice((0, 0.5, 5)),
             "duration_s": rng.choice((0.01, 1, 1000)), "loss_pct": rng.choice((1, 50, 99, 100))}
    raw.setdefault("jitter", []).append(entry)
    return f"jitter += {entry}"


def straggle(raw: dict, rng: random.Random) -> str:
    entry = {"kind": "compute", "rank": "random", "iter": 0, "delay_s": rng.choice((0.01, 1, 100, 3601, 5000))}
    raw.setdefault("jitter", []).append(entry)
    return f"jitter += {entry}"


def deadline(raw: dict, rng: random.Random) -> str:
    if rng.random() < 0.3:
        raw.setdefault("runner", {})["run_deadline_s"] = rng.choice((1, 10, 100))
        return f"runner.run_deadline_s = {raw['runner']['run_deadline_s']}"
    jobs = raw.get("jobs") if isinstance(raw.get("jobs"), list) else []
    if not jobs or not isinstance(jobs[0], dict):
        return "no job to give a deadline"
    key = rng.choice(("step_s", "run_s"))
    job = rng.choice(jobs)
    job.setdefault("deadlines", {})[key] = rng.choice((0.001, 0.1, 5.0, 1000.0))
    return f"jobs[].deadlines.{key} = {job['deadlines'][key]}"


def nodes(node, path=()):
    """(path, value) of every table, array and scalar below the document's root."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield (*path, key), value
        yield from nodes(value, (*path, key))


def graft(raw: dict, path: tuple, value, key: str | None = None) -> str:
    """The node at path replaced by value, or, with key, value added under
    key to the table at path (the node replaced where it is no table)."""
    node = raw
    for k in path[:-1]:
        node = node[k]
    if key is not None and isinstance(node[path[-1]], dict):
        node[path[-1]][key] = value
        return f"{_dotted((*path, key))} = {value!r}"
    node[path[-1]] = value
    return f"{_dotted(path)} = {value!r}"


# What a structural change puts in place of a node: another shape of value
# than the schema has there (a table for a number, an array of tables for a
# table, a date, a deep nest), under a known key or an odd one.
SHAPES = ({}, [], [{}], [[1, "x"], {"a": 1}], {"kind": "rate", "x": [1]}, dt.date(2026, 1, 1),
          dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC), dt.time(12, 0), [[[[[[[[[[1]]]]]]]]]])
ODD_KEYS = ("", " ", "kind", "a.b", "\n", "é", "k" * 300)


def retype(raw: dict, rng: random.Random) -> str:
    path, _ = rng.choice(list(nodes(raw)))
    key = rng.choice(ODD_KEYS) if rng.random() < 0.3 else None
    return graft(raw, path, copy.deepcopy(rng.choice(SHAPES)), key)


MUTATIONS = (scale, replace_value, drop, slow_link, link_delay, loss, straggle, deadline, retype)
# where `check`'s judgement of time matters: the samples worth a run
RISKY = (slow_link, link_delay, loss, straggle, deadline)


def mutant(seed: int) -> tuple[str, dict, list[str]]:
    """Sample `seed`: (the shipped config's name, its mutated TOML, what was changed)."""
    base, raw, what, _ = _mutant(seed)
    return base, raw, what


def _mutant(seed: int) -> tuple[str, dict, list[str], bool]:
    """mutant(), and whether a risky mutation (RISKY) was among the changes."""
    rng = random.Random(seed)
    base = rng.choice(CONFIGS)
    raw = C.load_raw(base)
    raw.pop("sweep", None)          # a point of a sweep is checked as the config is
    chosen = [rng.choice(MUTATIONS) for _ in range(rng.choice((1, 1, 2, 3)))]
    what = [m(raw, rng) for m in chosen]
    return base.stem, raw, what, any(m in RISKY for m in chosen)


# --- the property -----------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    code: int
    out: str
    err: list[str]


def verdict(raw: dict) -> Verdict:
    """`python3 -m experiments check` on a config, in this process."""
    return verdict_text(tomli_w.dumps(raw))


def verdict_text(text: str) -> Verdict:
    """`python3 -m experiments check` on a file of this text (TOML or not), in this process."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "mutant.toml"
        path.write_text(text, encoding="utf-8")
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = cli.main(["check", str(path)])
    return Verdict(code, out.getvalue(), err.getvalue().splitlines())


def violation(v: Verdict) -> str | None:
    """What of the property a verdict breaks, or None."""
    if v.code == exits.USAGE:
        if len(v.err) != 1 or not v.err[0].startswith("config error: ") or v.out:
            return f"refused with {len(v.err)} line(s) on stderr (and {len(v.out)} characters on stdout): {v.err}"
        return None
    if v.code != exits.OK:
        return f"exit {v.code}: {v.err}"
    if [line for line in v.err if not line.startswith(("warning: ", "note: "))]:
        return f"accepted, with more than warnings and notes on stderr: {v.err}"
    try:
        tomllib.loads(v.out)
    except tomllib.TOMLDecodeError as exc:
        return f"accepted, but stdout is not TOML: {exc}"
    return None


KINDS = (("at most 3600 s", "straggle over an hour"), ("a straggle of", "straggle longer than a run deadline"),
         ("% loss on", "loss: no delivery in time"), ("oracle's ideal step", "step deadline below the ideal"),
         ("oracle's ideal run", "run deadline below the ideal"),
         ("a step's least time", "step deadline below the window's floor"),
         ("the run's least time", "run deadline below the window's floor"))


def kind(line: str) -> str:
    """What a refusal is about: one of the sure-to-fail kinds, else a bad value."""
    return next((k for phrase, k in KINDS if phrase in line), "bad value or key")


def key(line: str) -> str:
    """The key a refusal names, indexes left out (jobs[0].x -> jobs[].x)."""
    m = re.match(r"config error: ([A-Za-z_][\w.\[\]]*)", line)
    return re.sub(r"\[\d+\]", "[]", m[1]) if m else line[:40]


def short_run(raw: dict, budget_s: float) -> dict | None:
    """An accepted config as one short run (one repeat, the baseline), or
    None when its run is expected to take longer than budget_s."""
    raw = {**copy.deepcopy(raw), "repeats": 1, "variants": ["baseline"]}
    try:
        run_s = feasible.assess(C.resolve(raw)).run_s
    except C.ConfigError:
        return None
    return raw if 0 < run_s <= budget_s else None


def run(raw: dict, out: Path) -> subprocess.CompletedProcess:
    """`experiments run` of a config on the soft target (root)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "mutant.toml"
    path.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "experiments", "run", str(path), "--target", "soft", "--out",
                           str(out), "--no-report", "--no-sim"], cwd=REPO, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)


# --- the command ----------------------------------------------------------------------

def fuzz(n: int, seed: int, runs: int, budget_s: float, say=print) -> dict:
    counts: Counter = Counter()
    kinds: Counter = Counter()
    keys: Counter = Counter()
    violations = []
    with tempfile.TemporaryDirectory(prefix="sym-fuzz-") as d:
        for i in range(seed, seed + n):
            base, raw, what, risky = _mutant(i)
            try:
                v = verdict(raw)
            except Exception as exc:        # a traceback is a violation too
                violations.append({"sample": i, "config": base, "changes": what, "problem": repr(exc)})
                continue
            counts["sampled"] += 1
            problem = violation(v)
            if problem:
                violations.append({"sample": i, "config": base, "changes": what, "problem": problem})
                continue
            if v.code == exits.USAGE:
                counts["refused"] += 1
                kinds[kind(v.err[0])] += 1
                keys[key(v.err[0])] += 1
                continue
            counts["accepted"] += 1
            warned = [line for line in v.err if line.startswith("warning: ")]
            counts["warned"] += bool(warned)
            # a warned sample may fail (a deadline close to the ideal): the property is the unwarned ones'
            short = short_run(raw, budget_s) if risky and not warned and counts["ran"] < runs else None
            if short is not None:
                counts["ran"] += 1
                r = run(short, Path(d) / f"run{i}")
                if r.returncode == exits.OK:
                    counts["ran_ok"] += 1
                else:
                    violations.append({"sample": i, "config": base, "changes": what,
                                       "problem": f"accepted, but its run exited {r.returncode}: "
                                                  f"{r.stderr.strip().splitlines()[-1:]}"})
            say(f"sample {i}: {base}: {'; '.join(what)}: {'accepted' if v.code == 0 else v.err[0]}")
    return {"sampled": counts["sampled"], "refused": counts["refused"], "refused_by_kind": dict(kinds),
            "refused_by_key": dict(keys), "accepted": counts["accepted"], "warned": counts["warned"],
            "ran": counts["ran"], "ran_ok": counts["ran_ok"], "violations": violations}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.fuzz_check", description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=500, help="samples (default 500)")
    ap.add_argument("--seed", type=int, default=0, help="the first sample's number (default 0)")
    ap.add_argument("--run", type=int, default=0, metavar="K", help="run up to K accepted samples (root)")
    ap.add_argument("--run-budget-s", type=float, default=20.0, help="only samples expected to run this long")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args(argv)
    doc = fuzz(args.n, args.seed, args.run, args.run_budget_s, say=(lambda line: None) if args.json else print)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(f"\n{doc['sampled']} sampled: {doc['refused']} refused, {doc['accepted']} accepted "
              f"({doc['warned']} with a warning); {doc['ran']} run, {doc['ran_ok']} ok")
        for k, count in sorted(doc["refused_by_kind"].items(), key=lambda kv: -kv[1]):
            print(f"  refused, {k}: {count}")
        for v in doc["violations"]:
            print(f"VIOLATION sample {v['sample']} ({v['config']}: {'; '.join(v['changes'])}): {v['problem']}")
    return 1 if doc["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
