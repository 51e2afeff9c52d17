"""`make clean-net`: remove what a crashed run left behind, touching only this
project's names (the PREFIX of topologies.names), never Mininet's `mn -c`."""

from __future__ import annotations

import os
import sys

from topologies.names import PREFIX
from topologies.nslab import remove_by_prefix


def main() -> int:
    if os.geteuid() != 0:
        print("clean-net: needs root (run: sudo make clean-net)", file=sys.stderr)
        return 1
    removed = remove_by_prefix(PREFIX, PREFIX)
    print(f"clean-net: removed {len(removed)} namespace(s)/interface(s)"
          + (": " + " ".join(removed) if removed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
