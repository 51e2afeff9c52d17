#!/usr/bin/env bash
# Compiles p4/symphony.p4 for Tofino2 (T2NA) into OUT (default build/tofino2):
# the pipeline's binary, context.json, bfrt.json, the bf_switchd conf, the
# P4Info, and (OUT/verbose) the compiler's resource logs with a summary of
# them (scripts/tofino2_resources.py).  A warning fails the build as an
# error does (the log stays in OUT/compile.log).  The compiler: Intel's
# bf-p4c (P4 Studio), or p4c built with its open-source Tofino backend
# (-DENABLE_TOFINO=ON: p4c --target tofino2 --arch t2na); none is exit 3.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build/tofino2}

# SYMPHONY_ABSENT=tofino (or all) makes the compiler look missing, as on
# a machine without one (contract/absent.py)
case ",${SYMPHONY_ABSENT:-}," in
    *,tofino,*|*,all,*)
        echo "make tofino2: SYMPHONY_ABSENT names tofino: treated as not installed" >&2
        exit 3 ;;
esac
if command -v bf-p4c >/dev/null 2>&1; then
    P4C=bf-p4c
# p4c lists the (target, arch) pairs its backends take as "target-arch"; a
# p4c without the Tofino backend (p4lang's packages) lists bmv2's only, and
# accepts "--target tofino2 --help" all the same
elif command -v p4c >/dev/null 2>&1 && p4c --target-help 2>/dev/null | grep -qx "tofino2-t2na"; then
    P4C=p4c
else
    echo "make tofino2: no Tofino compiler: install bf-p4c (Intel P4 Studio / open-p4studio) or build p4c with -DENABLE_TOFINO=ON (docs/tofino2.md)" >&2
    exit 3
fi

# the T2NA compile of the program into $1, with any further options
compile_t2na() {
    local out=$1; shift
    "$P4C" --std p4-16 --target tofino2 --arch t2na -o "$out" "$@" p4/symphony.p4
}

mkdir -p "$OUT"
# the driver empties its output directory first: the log goes in afterwards
log="$OUT/compile.log"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
started=$(date +%s)
status=0
compile_t2na "$OUT" --bf-rt-schema "$OUT/bfrt.json" --p4runtime-files "$OUT/symphony.p4info.txtpb" \
    >"$tmp" 2>&1 || status=$?
mkdir -p "$OUT" && cp "$tmp" "$log"
if [ "$status" -ne 0 ]; then
    cat "$log" >&2
    echo "make tofino2: $P4C failed (log: $log)" >&2
    exit 1
fi
if grep -qi "warning" "$log"; then
    cat "$log" >&2
    echo "make tofino2: $P4C warned (log: $log): a warning fails the build" >&2
    exit 1
fi
# p4c's driver (main @ 34b86e9b) never enables its p4c-gen-conf step: the
# bf_switchd conf comes from the same tool, run here when it is missing
if [ ! -f "$OUT/symphony.conf" ]; then
    if ! command -v p4c-gen-conf >/dev/null 2>&1; then
        echo "make tofino2: $P4C wrote no symphony.conf and p4c-gen-conf is not on PATH" >&2
        exit 1
    fi
    p4c-gen-conf --conf-type BF-RT --device tofino2 --name symphony --outputdir "$OUT" \
        --bfrt-name "$OUT/bfrt.json" --p4-version p4-16 --pipe pipe >>"$log" 2>&1 || {
        cat "$log" >&2; echo "make tofino2: p4c-gen-conf failed (log: $log)" >&2; exit 1; }
fi
echo "make tofino2: $OUT ($P4C, $(($(date +%s) - started)) s, no warning)"

# The resource logs come with --verbose 1, whose assembler also prints its
# own diagnostics (docs/tofino2.md says which and why they are left): a
# second compile, into OUT/verbose, for the summary only
verbose="$OUT/verbose"
if compile_t2na "$verbose" --verbose 1 >"$tmp" 2>&1 && [ -f "$verbose/pipe/logs/resources.json" ]; then
    cp "$tmp" "$verbose/compile.log"
    python3 scripts/tofino2_resources.py "$verbose/pipe/logs/resources.json"
else
    echo "make tofino2: no resource summary (the --verbose 1 compile failed; see $verbose)" >&2
    exit 1
fi
