"""The Tofino2 resource summary of a compiled Symphony: stages used out of the
pipe's, per stage the memories and ALUs taken out of what a stage has, and the
stage of every register, counter and table, from the compiler's
pipe/logs/resources.json (written by p4c/bf-p4c with --verbose 1).

    python3 scripts/tofino2_resources.py build/tofino2/verbose/pipe/logs/resources.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

# (what, how to count a stage's use, how to read the stage's capacity)
UNITS = (
    ("SRAM", lambda s: len(s["rams"]["srams"]), lambda s: s["rams"]["nRows"] * s["rams"]["nColumns"]),
    ("map RAM", lambda s: len(s["map_rams"]["maprams"]), lambda s: s["map_rams"]["nRows"] * s["map_rams"]["nUnits"]),
    ("TCAM", lambda s: len(s["tcams"]["tcams"]), lambda s: s["tcams"]["nRows"] * s["tcams"]["nColumns"]),
    ("stateful ALU", lambda s: len(s["meter_alus"]["meters"]), lambda s: s["meter_alus"]["nAlus"]),
    ("stats ALU", lambda s: len(s["statistic_alus"]["stats"]), lambda s: s["statistic_alus"]["nAlus"]),
    ("gateway", lambda s: len(s["gateways"]["gateways"]), lambda s: s["gateways"]["nRows"] * s["gateways"]["nUnits"]),
    ("logical table", lambda s: len(s["logical_tables"]["ids"]), lambda s: s["logical_tables"]["size"]),
)


def users(stage: dict) -> set[str]:
    """The named objects (registers, counters, tables) holding memory in a stage."""
    names = set()
    for ram in stage["rams"]["srams"] + stage["tcams"]["tcams"]:
        names.update(u["used_by"] for u in ram["usages"])
    return names


def short(name: str) -> str:
    """SymT2Ingress.symphony.flow_step_update.flow_step -> flow_step (ingress)."""
    gress = "egress" if name.startswith("SymT2Egress") else "ingress"
    return f"{name.rsplit('.', 1)[-1]} ({gress})"


def summary(resources: dict) -> list[str]:
    mau = resources["resources"]["mau"]
    stages = mau["mau_stages"]
    lines = [f"stages used: {len(stages)} of {mau['nStages']}"]
    header = "| stage | " + " | ".join(u[0] for u in UNITS) + " | holds |"
    lines += [header, "|" + " --- |" * (len(UNITS) + 2)]
    totals = [0] * len(UNITS)
    for s in stages:
        cells = []
        for i, (_, used, cap) in enumerate(UNITS):
            n = used(s)
            totals[i] += n
            cells.append(f"{n}/{cap(s)}")
        # registers, counters and tables (not the compiler's $action data tables)
        holders = ", ".join(sorted(short(n) for n in users(s) if "$" not in n))
        lines.append(f"| {s['stage_number']} | " + " | ".join(cells) + f" | {holders} |")
    if stages:
        # every stage of a pipe has the same units: any one gives the capacity
        cells = [f"{t}/{cap(stages[0]) * mau['nStages']}" for t, (_, _, cap) in zip(totals, UNITS, strict=True)]
        lines.append("| all | " + " | ".join(cells) + " | |")
    return lines


def phv_usage(logs: Path) -> str | None:
    """The 'Overall PHV Usage' row of the PHV allocation summary: containers
    and bits used out of the pipe's."""
    for log in sorted(logs.glob("phv_allocation_summary_*.log")):
        for line in log.read_text().splitlines():
            if "Overall PHV Usage" in line:
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                return f"PHV: {cells[1]} containers, {cells[2]} bits used of {cells[-1]}"
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: tofino2_resources.py PATH/pipe/logs/resources.json", file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        resources = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        print(f"tofino2_resources: cannot read {path}: {e}", file=sys.stderr)
        return 2
    print("\n".join(summary(resources)))
    phv = phv_usage(path.parent)
    if phv:
        print(phv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
