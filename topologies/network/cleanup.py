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

from topologies.network.lab import list_links, list_netns, sh
from topologies.network.names import PREFIX
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
    for ns in list_netns():
        if ns.startswith(PREFIX) and not any(p and ns.startswith(p) for p in live_prefixes):
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            sh("ip", "netns", "del", ns, check=False)
            removed.append(ns)
    for link in list_links():
        if link.startswith(PREFIX) and not any(p and link.startswith(p) for p in live_prefixes):
            sh("ip", "link", "del", link, check=False)
            removed.append(link)
    removed += remove_orphan_sock_dirs()
    print(f"clean-net: removed {len(removed)} item(s)" + (": " + " ".join(removed) if removed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
