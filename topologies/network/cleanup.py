"""`make clean-net`: remove what a crashed run left behind, touching only this
project's names (the PREFIX of topologies.network.names), never Mininet's `mn -c`.

1. Each state file in /run/symphony/ (topologies.network.state) whose owning process
   is gone: kill the pids it lists (only when their start time still
   matches), everything left in its hosts' network namespaces, and its
   prefixed interfaces; then the file.  A network whose owner still runs is
   left alone (``--force`` removes it too).
2. Every other namespace or interface with the project prefix (namespace labs
   of topologies.network.lab, leftovers without a state file), and socket
   directories in /run/symphony/ whose network has no state file left.
"""

from __future__ import annotations

import argparse
import os
import sys

from topologies.network.names import PREFIX
from topologies.network.shell import remove_by_prefix
from topologies.network.state import clean_state, owner_alive, read_states, remove_orphan_sock_dirs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m topologies.network.cleanup", description=__doc__.split("\n")[0])
    ap.add_argument("--force", action="store_true", help="also remove networks whose owner still runs")
    ap.add_argument("--id", action="append", metavar="ID",
                    help="only the network(s) with this id (from their state files); no prefix sweep")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("clean-net: needs root (run: sudo make clean-net)", file=sys.stderr)
        return 1
    removed: list[str] = []
    live_prefixes = []
    for path, data in read_states():
        if args.id and data.get("id", path.stem) not in args.id:
            continue
        if data and owner_alive(data) and not args.force:
            live_prefixes += [data.get("prefix", ""), f"{PREFIX}-{data.get('id')}-"]
            print(f"clean-net: network {data.get('id')} still runs (pid {data.get('owner')}); left alone")
            continue
        done = clean_state(path, data)
        removed += done
        print(f"clean-net: state {path.name}: {len(done)} removed" + (": " + ", ".join(done) if done else ""))
    if args.id:
        print(f"clean-net: removed {len(removed)} item(s)")
        return 0
    removed += remove_by_prefix(PREFIX, PREFIX, keep=live_prefixes)
    removed += remove_orphan_sock_dirs()
    print(f"clean-net: removed {len(removed)} item(s)" + (": " + " ".join(removed) if removed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
