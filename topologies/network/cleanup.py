"""`make clean-net`: remove what a crashed run left behind, touching only this
project's names (the PREFIX of topologies.network.names), never Mininet's `mn -c`.

Every lab that creates prefixed names (networks, namespace labs, the
conformance rig, the CE-marker harness, the netem probe) writes its state
file in /run/symphony/ (topologies.network.state) before it creates any.

1. Each state file whose owning process is gone: kill the pids it lists
   (only when their start time still matches) and the processes marked with
   its id, everything left in its hosts' namespaces, and its prefixed
   interfaces; then the file.  A lab whose owner still runs is left alone,
   with every name under its prefixes (``--force`` removes it too).
2. Every other namespace or interface with the project prefix that existed
   before the state files were read (so it belongs to no live lab: a lab
   writes its state file before its first name), and socket directories in
   /run/symphony/ whose lab has no state file left.  With ``--id``, only
   that lab's state file and names.
"""

from __future__ import annotations

import argparse
import os
import sys

from topologies.network.names import PREFIX
from topologies.network.shell import list_links, list_netns, remove_by_prefix
from topologies.network.state import clean_state, owner_alive, read_states, remove_orphan_sock_dirs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m topologies.network.cleanup", description=__doc__.split("\n")[0])
    ap.add_argument("--force", action="store_true", help="also remove labs whose owner still runs")
    ap.add_argument("--id", action="append", metavar="ID",
                    help="only the lab(s) with this id: its state file, and its names (sym<ID>..., sym-<ID>-...) "
                         "unless its owner still runs")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("clean-net: needs root (run: sudo make clean-net)", file=sys.stderr)
        return 1
    # names first, state files second: whatever name is listed here had its
    # lab's state file written before it, so the read below sees that lab
    seen = list_netns() + list_links()
    removed: list[str] = []
    live_prefixes = []
    for path, data in read_states():
        chosen = not args.id or data.get("id", path.stem) in args.id
        if data and owner_alive(data) and not (args.force and chosen):
            # every live lab's names are kept, whichever ids were asked for
            live_prefixes += [data.get("prefix", ""), f"{PREFIX}-{data.get('id')}-"]
            if chosen:
                print(f"clean-net: {data.get('what', 'network')} {data.get('id')} still runs "
                      f"(pid {data.get('owner')}); left alone")
            continue
        if not chosen:
            continue
        done = clean_state(path, data)
        removed += done
        print(f"clean-net: state {path.name}: {len(done)} removed" + (": " + ", ".join(done) if done else ""))
    if args.id:
        for lab_id in args.id:
            removed += remove_by_prefix(f"{PREFIX}-{lab_id}-", f"{PREFIX}{lab_id}", keep=live_prefixes, among=seen)
    else:
        removed += remove_by_prefix(PREFIX, PREFIX, keep=live_prefixes, among=seen)
        removed += remove_orphan_sock_dirs()
    print(f"clean-net: removed {len(removed)} item(s)" + (": " + " ".join(removed) if removed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
