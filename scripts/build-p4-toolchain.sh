#!/usr/bin/env bash
# Builds the P4 toolchain the testbed runs on BMv2 from source, at pinned
# upstream commits, into a prefix (default /usr/local):
#   bmv2     behavioral-model: simple_switch with Thrift, simple_switch_CLI, the
#            Python modules sswitch_runtime, bm_runtime and bmpy_utils, and a
#            symphony-bmv2.pth naming their directory for the system python3;
#   p4c      the v1model/BMv2 backend (p4c, p4c-bm2-ss) and p4test, other backends off;
#   p4utils  nsg-ethz/p4-utils, `pip install --no-deps -e` into the system python3.
# on Debian 12 and Ubuntu 22.04/24.04.  Reference: docs/vm.md, "Without the VM".
#
#   sudo scripts/build-p4-toolchain.sh                       # all three, git clones under /opt/src
#   sudo scripts/build-p4-toolchain.sh --src /opt/src        # source trees already on the machine
#   sudo scripts/build-p4-toolchain.sh --only bmv2 --bmv2-flavour package --prefix /opt/symphony-bmv2-package
#   scripts/build-p4-toolchain.sh --dry-run                  # print what it would do
#
# Idempotent as scripts/provision-vm.sh is: every step has a check that runs
# first; a step whose check passes is skipped, and a step that ran must make its
# check pass, or the script stops naming the step.  A build records what it
# built in PREFIX/share/symphony-toolchain/<part>.build (commit, flavour, flags);
# the check reads it back, and experiments/config/budget.py reads the BMv2 one
# to tell which build is on the PATH.  The times it prints are wall clock.
#
# Nothing in it waits with a timeout, so the whole run can be paused and resumed
# by process group (kill -STOP -PGID, kill -CONT -PGID), e.g. when started as
#   setsid nice -n 19 ionice -c3 scripts/build-p4-toolchain.sh ... &
# (a pause during an apt step holds dpkg's lock until it resumes).
#
# Environment (optional; tests/scripts/test_build_p4_toolchain.py runs the script
# against stub commands with these):
#   TOOLCHAIN_PYTHON (/usr/bin/python3), TOOLCHAIN_OS_RELEASE (/etc/os-release),
#   TOOLCHAIN_ALLOW_ANY_OS=1 (go on, with a warning, on another release),
#   TOOLCHAIN_ALLOW_NONROOT=1
set -euo pipefail

PROG=build-p4-toolchain

# --- pins ------------------------------------------------------------------------------
# behavioral-model main, 2026-08-20, two commits after the 1.15.5 release; the
# build docs/log/2026-11-29-bmv2-on-debian12.md ran the suite on.
BMV2_URL=https://github.com/p4lang/behavioral-model.git
BMV2_COMMIT=9674187f610c81878e3586f9a1746dcc7f903114
# p4c v1.2.4.8 (tag), which builds with Debian 12's Protobuf 3.21
P4C_URL=https://github.com/p4lang/p4c.git
P4C_COMMIT=32893b7e879db9e1c368d3568d41cb3d20c034d0
# the p4runtime commit p4c v1.2.4.8's CMakeLists.txt FetchContent asks for; cloned
# here and handed to CMake, so that the p4c build itself never goes online
P4RUNTIME_URL=https://github.com/p4lang/p4runtime.git
P4RUNTIME_COMMIT=1e771c4e05c4e7e250df00212b3ca02ee3202d71
# p4-utils master, 2024-07-10: the commit scripts/provision-vm.sh pins
P4UTILS_URL=https://github.com/nsg-ethz/p4-utils.git
P4UTILS_COMMIT=83b118bbae530b31cc74e7fa32f9174f7c0a1184

# --- apt packages (Debian 12, Ubuntu 22.04, 24.04 names) ---------------------------------
BMV2_APT=(git ca-certificates g++ make autoconf automake libtool libtool-bin pkg-config
          libboost-dev libboost-program-options-dev libboost-system-dev libboost-filesystem-dev
          libboost-thread-dev libevent-dev libssl-dev libgmp-dev libpcap-dev libnanomsg-dev
          libxxhash-dev libjsoncpp-dev thrift-compiler libthrift-dev python3-thrift python3
          libprotobuf-dev protobuf-compiler   # the package flavour's packet tracing
          dpkg-dev)                           # dpkg-buildflags, for the package flavour's CXXFLAGS
P4C_APT=(git ca-certificates g++ make cmake bison flex libfl-dev pkg-config python3
         libboost-dev libboost-iostreams-dev libgc-dev libgmp-dev
         libprotobuf-dev libprotoc-dev protobuf-compiler)
P4UTILS_APT=(git ca-certificates python3-pip python3-setuptools python3-psutil python3-networkx mininet)

# --- BMv2 configurations -----------------------------------------------------------------
# performance: BMv2's docs/performance.md ("Which build flags to use").
#   --disable-logging-macros  compiles out BMLOG_DEBUG/BMLOG_TRACE (LOG_DEBUG_ON and
#                             LOG_TRACE_ON undefined): the per-packet, per-table,
#                             per-action debug and trace log calls are gone from the
#                             binary, not merely filtered by --log-level at run time;
#   --disable-elogger         compiles out the nanomsg event logger (ELOG_ON undefined):
#                             no per-packet event (packet_in, parser_start, table_hit,
#                             ...) is built or sent, and --nanolog does nothing;
#   --without-packet-trace    compiles out the structured packet tracing behavioral-model
#                             added in 2026-07 (#1418, PACKET_TRACE_ON), after
#                             performance.md was written: while it is on, the per-packet
#                             event hooks (BMELOG) stay compiled in even with
#                             --disable-elogger, and every packet carries a trace context;
#   -O3 -g0                   performance.md's -O3 (its -g only adds debug info, which
#                             does not change the code; -g0 keeps the build smaller).
# --with-thrift and --with-nanomsg are BMv2's defaults, written out: Thrift is the
# control plane the testbed and p4-utils use.  --disable-static (both flavours)
# only saves time: libtool otherwise compiles every file twice, once more for
# static libraries that simple_switch does not link (it links the shared ones).
BMV2_PERFORMANCE_CONFIGURE=(--with-thrift --with-nanomsg --disable-logging-macros --disable-elogger
                            --without-packet-trace --disable-static)
BMV2_PERFORMANCE_CFLAGS="-g0 -O3"
# package: the configure line of the debian/rules in behavioral-model's packaging
# (pull request #989, refs/pull/989/head, debian/rules: dh_auto_configure --
# --with-pdfixed --enable-debugger --with-thrift --with-nanomsg) with the flags
# dpkg-buildflags gives under its DEB_BUILD_MAINT_OPTIONS=hardening=+all (-g -O2,
# fortify, stack protector, PIE, ...).  Logging macros, event logger and packet
# tracing stay at their default, on; the debugger is on.  Only for measuring the
# difference (experiments.bench.bmv2 --simple-switch ...).
BMV2_PACKAGE_CONFIGURE=(--with-pdfixed --enable-debugger --with-thrift --with-nanomsg --disable-static)
# the directories simple_switch, its CLI and Python modules need; the other targets
# (psa_switch, pna_nic, simple_router, ...) would add about an hour on 2 cores
BMV2_DIRS=(thrift_src third_party src include targets/simple_switch tools)

# --- p4c configuration -------------------------------------------------------------------
P4C_CMAKE=(-DCMAKE_BUILD_TYPE=Release
           -DENABLE_BMV2=ON -DENABLE_P4TEST=ON
           -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF -DENABLE_DPDK=OFF -DENABLE_P4TC=OFF
           -DENABLE_P4C_GRAPHS=OFF -DENABLE_TEST_TOOLS=OFF -DENABLE_GTESTS=OFF -DENABLE_DOCS=OFF
           # the distribution's Protobuf, shared, instead of a download
           -DP4C_USE_PREINSTALLED_PROTOBUF=ON -DENABLE_PROTOBUF_STATIC=OFF
           -DFETCHCONTENT_FULLY_DISCONNECTED=ON)

PTH_NAME=symphony-bmv2.pth
BMV2_IMPORTS="import sswitch_runtime, bm_runtime, bmpy_utils"

# --- options -----------------------------------------------------------------------------
usage() {
    cat <<EOF
usage: $PROG [--prefix DIR] [--src DIR] [--work DIR] [--only bmv2|p4c|p4utils]...
             [--jobs N] [--bmv2-flavour performance|package] [--dry-run]

  --prefix DIR         install prefix (default /usr/local)
  --src DIR            use the source trees in DIR (behavioral-model/, p4c/, p4runtime/,
                       p4-utils/) instead of cloning from GitHub; a git tree must be at
                       the pinned commit
  --work DIR           where clones (without --src) and build directories go (default /opt/src)
  --only PART          build only PART (bmv2, p4c or p4utils); repeatable; default: all three,
                       in that order
  --jobs N             parallel compile jobs (default: nproc)
  --bmv2-flavour F     performance (default: BMv2's docs/performance.md) or package (the
                       configuration of BMv2's debian/rules: logging, event logger and
                       debugger on; only for measuring the difference)
  --dry-run            print what each step would do; change nothing
EOF
}

bad_usage() { echo "$PROG: $*; see --help" >&2; exit 2; }

PREFIX=/usr/local
SRC=""
WORK=/opt/src
JOBS=""
FLAVOUR=performance
DRY_RUN=0
ONLY=()
while [ $# -gt 0 ]; do
    case $1 in
        --prefix|--src|--work|--only|--jobs|--bmv2-flavour)
            if [ $# -lt 2 ] || [ -z "$2" ]; then bad_usage "$1 needs a value"; fi
            case $1 in
                --prefix) PREFIX=$2 ;;
                --src) SRC=$2 ;;
                --work) WORK=$2 ;;
                --only) case $2 in bmv2|p4c|p4utils) ONLY+=("$2") ;;
                                   *) bad_usage "--only takes bmv2, p4c or p4utils, not '$2'" ;; esac ;;
                --jobs) [[ $2 =~ ^[1-9][0-9]*$ ]] || bad_usage "--jobs takes a whole number >= 1, not '$2'"
                        JOBS=$2 ;;
                --bmv2-flavour) case $2 in performance|package) FLAVOUR=$2 ;;
                                *) bad_usage "--bmv2-flavour takes performance or package, not '$2'" ;; esac ;;
            esac
            shift 2 ;;
        --dry-run) DRY_RUN=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) bad_usage "unknown option '$1'" ;;
    esac
done
case $PREFIX in /*) ;; *) bad_usage "--prefix needs an absolute path, not '$PREFIX'" ;; esac
case $WORK in /*) ;; *) bad_usage "--work needs an absolute path, not '$WORK'" ;; esac
if [ -n "$SRC" ]; then
    case $SRC in /*) ;; *) SRC=$(cd "$SRC" 2>/dev/null && pwd) || bad_usage "--src: no directory '$SRC'" ;; esac
    [ -d "$SRC" ] || bad_usage "--src: no directory '$SRC'"
fi
[ -n "$JOBS" ] || JOBS=$(nproc 2>/dev/null || echo 2)
[ ${#ONLY[@]} -gt 0 ] || ONLY=(bmv2 p4c p4utils)
wants() { local p; for p in "${ONLY[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }

PYTHON=${TOOLCHAIN_PYTHON:-/usr/bin/python3}
OS_RELEASE=${TOOLCHAIN_OS_RELEASE:-/etc/os-release}
SRC_ROOT=${SRC:-$WORK}
BMV2_SRC=$SRC_ROOT/behavioral-model
P4C_SRC=$SRC_ROOT/p4c
P4RUNTIME_SRC=$SRC_ROOT/p4runtime
P4UTILS_SRC=$SRC_ROOT/p4-utils
BUILD_ROOT=$WORK/build
BMV2_BUILD=$BUILD_ROOT/bmv2-$FLAVOUR
P4C_BUILD=$BUILD_ROOT/p4c
RECORDS=$PREFIX/share/symphony-toolchain

# --- helpers -----------------------------------------------------------------------------
say() { echo "$PROG: $*"; }
die() { echo "$PROG: FAILED: $*" >&2; exit 1; }

# show ARGS...: the words as a shell would read them back (quoted where they hold a space)
show() {
    local a out=()
    for a in "$@"; do
        case $a in *[[:space:]]*) out+=("'$a'") ;; *) out+=("$a") ;; esac
    done
    echo "${out[*]}"
}
# run CMD...: run it, or under --dry-run print it
run() {
    if [ "$DRY_RUN" = 1 ]; then
        say "  would: $(show "$@")"
    else
        "$@"
    fi
}
# in_dir DIR CMD...: run CMD in DIR (printed as such under --dry-run)
in_dir() {
    local dir=$1; shift
    if [ "$DRY_RUN" = 1 ]; then
        say "  would: (cd $dir && $(show "$@"))"
    else
        (cd "$dir" && "$@")
    fi
}

duration() { printf '%d min %02d s' $(($1 / 60)) $(($1 % 60)); }
TIMES=()

# step NAME: skip when check_NAME passes; else run do_NAME and require check_NAME after it.
step() {
    local name=$1 fn=${1//-/_} start
    fn=${fn//./_}
    if "check_$fn"; then
        say "skip $name (already done)"
    elif [ "$DRY_RUN" = 1 ]; then
        say "would-run $name"
        "do_$fn"
    else
        say "run $name"
        start=$SECONDS
        "do_$fn"
        "check_$fn" || die "$name: ran, but its check still fails (see the output above)"
        TIMES+=("$name $((SECONDS - start))")
        say "done $name in $(duration $((SECONDS - start)))"
    fi
}

packages_installed() {
    local pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || return 1
    done
}
apt_install() {
    run apt-get update -q
    run env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

os_field() { sed -n "s/^$1=//p" "$OS_RELEASE" | head -n1 | tr -d "\"'"; }

# commit_of DIR: the tree's HEAD, or "tree:DIR" for a source tree that is not a git clone
commit_of() {
    git -C "$1" rev-parse HEAD 2>/dev/null || echo "tree:$1"
}
# tree_ok DIR PIN: the tree is there and, if it is a git clone, at PIN
tree_ok() {
    local dir=$1 pin=$2 head
    [ -d "$dir" ] || return 1
    head=$(git -C "$dir" rev-parse HEAD 2>/dev/null) || { [ -n "$SRC" ] && [ -n "$(ls -A "$dir")" ]; return; }
    [ "$head" = "$pin" ]
}
# get_tree NAME DIR URL PIN: clone (without --src) or explain what is wrong with the given tree
get_tree() {
    local name=$1 dir=$2 url=$3 pin=$4 head
    if [ -n "$SRC" ]; then
        head=$(git -C "$dir" rev-parse HEAD 2>/dev/null || true)
        [ -d "$dir" ] || die "--src $SRC has no $name/ (a checkout of $url at $pin)"
        die "$dir is at ${head:-?}, this script pins $pin: run git -C $dir checkout $pin"
    fi
    [ -d "$dir/.git" ] || run git clone -q "$url" "$dir"
    if [ "$DRY_RUN" = 1 ]; then
        run git -C "$dir" checkout -q "$pin"
    else
        git -C "$dir" checkout -q "$pin" 2>/dev/null \
            || { git -C "$dir" fetch -q origin && git -C "$dir" checkout -q "$pin"; }
    fi
}

# record PART LINES...: write PREFIX/share/symphony-toolchain/PART.build
record() {
    local part=$1; shift
    run mkdir -p "$RECORDS"
    if [ "$DRY_RUN" = 1 ]; then
        say "  would: write $RECORDS/$part.build: $*"
    else
        printf '%s\n' "$@" >"$RECORDS/$part.build"
    fi
}
# recorded PART KEY=VALUE...: the record holds every given line
recorded() {
    local part=$1 line; shift
    [ -r "$RECORDS/$part.build" ] || return 1
    for line in "$@"; do grep -qxF "$line" "$RECORDS/$part.build" || return 1; done
}

# --- preconditions -----------------------------------------------------------------------
check_os() {
    [ -r "$OS_RELEASE" ] || die "cannot read $OS_RELEASE"
    local found
    found="$(os_field ID) $(os_field VERSION_ID)"
    case $found in
        "debian 12"|"ubuntu 22.04"|"ubuntu 24.04") ;;
        *) [ "${TOOLCHAIN_ALLOW_ANY_OS:-0}" = 1 ] \
               || die "this script knows Debian 12 and Ubuntu 22.04/24.04, found '$found'; set TOOLCHAIN_ALLOW_ANY_OS=1 to try anyway"
           say "WARNING: found '$found', not Debian 12 or Ubuntu 22.04/24.04: package names may differ" ;;
    esac
    if [ "$(id -u)" -ne 0 ] && [ "$DRY_RUN" != 1 ] && [ "${TOOLCHAIN_ALLOW_NONROOT:-0}" != 1 ]; then
        die "needs root to install packages and into $PREFIX (run: sudo $0 ...)"
    fi
}

# --- bmv2 --------------------------------------------------------------------------------
check_apt_bmv2() { packages_installed "${BMV2_APT[@]}"; }
do_apt_bmv2() { apt_install "${BMV2_APT[@]}"; }

check_src_behavioral_model() { tree_ok "$BMV2_SRC" "$BMV2_COMMIT"; }
do_src_behavioral_model() { get_tree behavioral-model "$BMV2_SRC" "$BMV2_URL" "$BMV2_COMMIT"; }

bmv2_configure_args() {   # one word a line: what configure gets for this flavour
    if [ "$FLAVOUR" = performance ]; then
        printf '%s\n' "${BMV2_PERFORMANCE_CONFIGURE[@]}" "CFLAGS=$BMV2_PERFORMANCE_CFLAGS" \
               "CXXFLAGS=$BMV2_PERFORMANCE_CFLAGS"
    else
        printf '%s\n' "${BMV2_PACKAGE_CONFIGURE[@]}"
        local var flags
        for var in CFLAGS CXXFLAGS CPPFLAGS LDFLAGS; do
            # from the source tree, as dpkg-buildpackage runs it (its -ffile-prefix-map names the cwd)
            flags=$(cd "$BMV2_SRC" 2>/dev/null || cd /
                    DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$var" 2>/dev/null \
                    || echo "<dpkg-buildflags --get $var>")
            echo "$var=$flags"
        done
    fi
}
bmv2_record_lines() {
    echo "part=bmv2"
    echo "flavour=$FLAVOUR"
    echo "commit=$(commit_of "$BMV2_SRC")"
    echo "configure=$(bmv2_configure_args | tr '\n' ' ' | sed 's/ $//')"
}

check_bmv2() {
    [ -x "$PREFIX/bin/simple_switch" ] && [ -x "$PREFIX/bin/simple_switch_CLI" ] \
        && recorded bmv2 "flavour=$FLAVOUR" "commit=$(commit_of "$BMV2_SRC")" \
        && "$PREFIX/bin/simple_switch" --version >/dev/null 2>&1
}
do_bmv2() {
    local args dir dirs
    mapfile -t args < <(bmv2_configure_args)
    dirs=("${BMV2_DIRS[@]}")
    # packet tracing (on unless --without-packet-trace) links src/ against proto/
    [ "$FLAVOUR" = performance ] || dirs=(thrift_src third_party proto "${dirs[@]:2}")
    say "BMv2 $FLAVOUR: configure $(show "${args[@]}")"
    # autogen.sh writes configure into the source tree once; each flavour then builds
    # out of tree in its own directory, so both can sit side by side
    [ -x "$BMV2_SRC/configure" ] || in_dir "$BMV2_SRC" ./autogen.sh
    run rm -rf "$BMV2_BUILD"
    run mkdir -p "$BMV2_BUILD"
    in_dir "$BMV2_BUILD" "$BMV2_SRC/configure" --prefix="$PREFIX" "${args[@]}"
    for dir in "${dirs[@]}"; do
        in_dir "$BMV2_BUILD" make -j "$JOBS" -C "$dir"
    done
    for dir in "${dirs[@]}"; do
        in_dir "$BMV2_BUILD" make -C "$dir" install
    done
    run ldconfig
    mapfile -t args < <(bmv2_record_lines)
    record bmv2 "${args[@]}"
}

# Where BMv2 put sswitch_runtime, bm_runtime and bmpy_utils: autotools installs
# them into $(pythondir), PREFIX/lib/pythonX.Y/site-packages, which Debian's and
# Ubuntu's python3 never read (they read dist-packages).
bmv2_python_dirs() {
    local rel file dir
    for rel in sswitch_runtime/__init__.py bm_runtime/__init__.py bmpy_utils.py; do
        file=$(find "$PREFIX/lib" -path "*/$rel" 2>/dev/null | sort | head -n1 || true)
        [ -n "$file" ] || return 1
        dir=$(dirname "$file")
        [ "$rel" = bmpy_utils.py ] || dir=$(dirname "$dir")
        echo "$dir"
    done | sort -u
}
# env -i: as under sudo, which drops PYTHONPATH
check_bmv2_python_path() { env -i "$PYTHON" -c "$BMV2_IMPORTS" 2>/dev/null; }
do_bmv2_python_path() {
    local site dirs
    site=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
    if [ "$DRY_RUN" = 1 ]; then
        say "  would: write $site/$PTH_NAME naming the directories of sswitch_runtime, bm_runtime, bmpy_utils under $PREFIX/lib"
        return 0
    fi
    dirs=$(bmv2_python_dirs) || die "BMv2's Python modules (sswitch_runtime, bm_runtime, bmpy_utils) are not under $PREFIX/lib"
    mkdir -p "$site"
    printf '%s\n' "$dirs" >"$site/$PTH_NAME"
    say "wrote $site/$PTH_NAME -> $(echo "$dirs" | tr '\n' ' ')"
}

# --- p4c ---------------------------------------------------------------------------------
check_apt_p4c() { packages_installed "${P4C_APT[@]}"; }
do_apt_p4c() { apt_install "${P4C_APT[@]}"; }

check_src_p4c() { tree_ok "$P4C_SRC" "$P4C_COMMIT"; }
do_src_p4c() { get_tree p4c "$P4C_SRC" "$P4C_URL" "$P4C_COMMIT"; }
check_src_p4runtime() { tree_ok "$P4RUNTIME_SRC" "$P4RUNTIME_COMMIT"; }
do_src_p4runtime() { get_tree p4runtime "$P4RUNTIME_SRC" "$P4RUNTIME_URL" "$P4RUNTIME_COMMIT"; }

check_p4c() {
    [ -x "$PREFIX/bin/p4c" ] && [ -x "$PREFIX/bin/p4test" ] \
        && recorded p4c "commit=$(commit_of "$P4C_SRC")" \
        && "$PREFIX/bin/p4c-bm2-ss" --version >/dev/null 2>&1
}
do_p4c() {
    local cmake_args=("${P4C_CMAKE[@]}" -DCMAKE_INSTALL_PREFIX="$PREFIX"
                      -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$P4RUNTIME_SRC")
    say "p4c: cmake ${cmake_args[*]}"
    run mkdir -p "$P4C_BUILD"
    run cmake -S "$P4C_SRC" -B "$P4C_BUILD" "${cmake_args[@]}"
    run cmake --build "$P4C_BUILD" -j "$JOBS"
    run cmake --install "$P4C_BUILD"
    record p4c "part=p4c" "commit=$(commit_of "$P4C_SRC")" "p4runtime=$(commit_of "$P4RUNTIME_SRC")" \
        "cmake=${P4C_CMAKE[*]}"
}

# --- p4utils -----------------------------------------------------------------------------
check_apt_p4utils() { packages_installed "${P4UTILS_APT[@]}"; }
do_apt_p4utils() { apt_install "${P4UTILS_APT[@]}"; }

check_src_p4_utils() { tree_ok "$P4UTILS_SRC" "$P4UTILS_COMMIT"; }
do_src_p4_utils() { get_tree p4-utils "$P4UTILS_SRC" "$P4UTILS_URL" "$P4UTILS_COMMIT"; }

check_p4utils() {
    local where
    where=$(env -i "$PYTHON" -c 'import os, p4utils; print(os.path.realpath(p4utils.__file__))' 2>/dev/null) \
        || return 1
    case $where in "$(realpath "$P4UTILS_SRC" 2>/dev/null)"/*) ;; *) return 1 ;; esac
    env -i "$PYTHON" -c "from p4utils.utils.sswitch_thrift_API import SimpleSwitchThriftAPI" 2>/dev/null
}
do_p4utils() {
    # p4-utils' SimpleSwitchThriftAPI imports BMv2's modules: never p4-utils without BMv2
    if [ "$DRY_RUN" != 1 ] && ! check_bmv2_python_path; then
        die "p4utils needs BMv2's Python modules on $PYTHON's path first (build bmv2 before p4utils)"
    fi
    # --no-deps: its pins (grpcio 1.44, protobuf 3.20) are for its P4Runtime client, which
    # the testbed does not use, and grpcio 1.44 has no wheel past Python 3.10; its other
    # needs (psutil, networkx, mininet) come from apt.  Debian 12 and Ubuntu 24.04 mark
    # the system python as externally managed (PEP 668): pip then needs the override.
    local pip=("$PYTHON" -m pip install --no-deps -e "$P4UTILS_SRC")
    if "$PYTHON" -c 'import sys, sysconfig, os; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))' 2>/dev/null; then
        pip+=(--break-system-packages)
    fi
    run "${pip[@]}"
    record p4utils "part=p4utils" "commit=$(commit_of "$P4UTILS_SRC")"
}

# --- main --------------------------------------------------------------------------------
main() {
    local parts
    parts=$(printf '%s ' "${ONLY[@]}")
    say "parts: ${parts% }; prefix $PREFIX; sources ${SRC:-git clones in $WORK}; jobs $JOBS; bmv2 flavour $FLAVOUR$([ "$DRY_RUN" = 1 ] && echo '; dry run: nothing is changed')"
    check_os
    local start=$SECONDS
    if wants bmv2; then
        step apt-bmv2
        step src-behavioral-model
        step bmv2
        step bmv2-python-path
    fi
    if wants p4c; then
        step apt-p4c
        step src-p4c
        step src-p4runtime
        step p4c
    fi
    if wants p4utils; then
        step apt-p4utils
        step src-p4-utils
        step p4utils
    fi
    [ "$DRY_RUN" = 1 ] && return 0
    local t
    for t in ${TIMES[@]+"${TIMES[@]}"}; do
        say "took ${t%% *}: $(duration "${t##* }")"
    done
    say "took in all: $(duration $((SECONDS - start)))"
}

main
