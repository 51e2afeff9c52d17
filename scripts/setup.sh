#!/usr/bin/env bash
# Idempotent set-up of the testbed on Debian 12 / Ubuntu 22.04 / 24.04:
# system packages, then a virtual environment in .venv made from the
# distribution's Python with --system-site-packages, because Debian's
# Mininet package installs its modules for /usr/bin/python3 only.
set -euo pipefail
cd "$(dirname "$0")/.."

SYSTEM_PACKAGES=(
    mininet         # the emulator (mnexec, the mininet Python package)
    iproute2        # ip netns, veth, tc htb/tbf
    iputils-ping    # reachability checks
    ethtool         # Mininet's TCIntf and P4Host call it
    python3-venv    # the project's virtual environment
    python3-pip
    procps psmisc   # ps, pkill by pid group in cleanup
    shellcheck      # lint of the shell scripts (tests)
    ruby            # `ruby -c Vagrantfile` (tests)
    g++ cmake       # the compiled packet engine (engine/)
)
VENV=.venv
PYTHON=/usr/bin/python3

missing=()
for pkg in "${SYSTEM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: needs root to install ${missing[*]} (run: sudo make setup)" >&2
        exit 1
    fi
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # no recommends: Mininet recommends Open vSwitch, which this testbed does not use
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV from $PYTHON"
    "$PYTHON" -m venv --system-site-packages "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
# cluster: dask's distributed, for --workers (docs/cli.md), which the suite tests against a local cluster
"$VENV/bin/python" -m pip install -q -e ".[test,cluster]"
# the compiled packet engine: C++17 through scikit-build-core and nanobind
# (PyPI), in the venv itself rather than pip's throwaway build env, so the
# build tree kept in engine/build names the same paths and the next
# rebuild compiles only what changed
"$VENV/bin/python" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.0"
"$VENV/bin/python" -m pip install -q --no-build-isolation ./engine \
    || { echo "setup: building the packet engine (engine/) failed: the compiler's messages are above" >&2; exit 1; }
"$VENV/bin/python" -c "import mininet.net, numpy, matplotlib, symphony_engine" \
    || { echo "setup: the virtual environment cannot import Mininet/numpy/matplotlib/symphony_engine" >&2; exit 1; }
echo "setup: ready ($("$VENV/bin/python" --version), Mininet $("$VENV/bin/python" -c 'import mininet.net; print(mininet.net.VERSION)'))"
