#!/usr/bin/env bash
# Provision the Symphony testbed VM: p4c, BMv2 (simple_switch and its Thrift
# Python modules), Mininet, p4-utils, then the project's own `make setup`,
# `make p4` and `make test`.  The Vagrantfile runs it as root; it can also be
# run by hand on a fresh Ubuntu 22.04 machine: sudo scripts/provision-vm.sh
#
# Idempotent by construction: every step has a check ("is it already done?")
# that runs first; a step whose check passes is skipped, and a step that ran
# must make its check pass, or the script stops with the step's name.  A second
# run therefore skips everything that is installed.
#
# Why Ubuntu 22.04 (jammy) and not 24.04: p4-utils (nsg-ethz/p4-utils,
# setup.py) pins grpcio==1.44.0 and protobuf==3.20.3.  protobuf 3.20.3 is a
# pure-Python wheel, but grpcio 1.44.0 ships binary wheels only up to CPython
# 3.10 (checked with `pip download grpcio==1.44.0 --only-binary=:all:
# --python-version 3.11/3.12`: no match; 3.10: cp310 manylinux2014 wheel).
# Ubuntu 22.04's python3 is 3.10; 24.04's is 3.12, where pip would have to
# build grpcio 1.44 from source (p4lang/tutorials notes even grpcio 1.51.3
# fails to install on 24.04) and where `pip install` as root into the system is
# refused (PEP 668).  The p4lang packages (OBS home:p4lang) are built for
# xUbuntu_22.04.  So 22.04 lets p4-utils install exactly as its authors pin it.
#
# Environment (all optional; the PROVISION_* overrides exist so that
# tests/scripts/test_provision_vm.py can run this script against stub commands):
#   PROVISION_DRY_RUN=1        print what each step would do; change nothing
#   PROVISION_RUN_TESTS=0      do not run `make test` at the end
#   PROVISION_ALLOW_ANY_OS=1   go on (with a warning) on a release other than Ubuntu 22.04
#   PROVISION_TOOLCHAIN=packages|source   (the Vagrantfile's SYMPHONY_VM_TOOLCHAIN)
#       packages (default): p4c and BMv2 from the p4lang repository of the openSUSE
#         Build Service: minutes to install, but BMv2 built with its logging macros
#         and event logger, the slow BMv2 (docs/vm.md, "Which toolchain");
#       source: BMv2 (performance configuration) and p4c built by
#         scripts/build-p4-toolchain.sh, hours of compiling on a few cores
#   PROVISION_REPO, PROVISION_PYTHON, PROVISION_PIP, PROVISION_SUDO,
#   PROVISION_APT_ETC, PROVISION_OS_RELEASE, PROVISION_P4UTILS_DIR,
#   PROVISION_BMV2_SEARCH, PROVISION_ALLOW_NONROOT, PROVISION_TOOLCHAIN_SCRIPT
set -euo pipefail

REPO_DIR=${PROVISION_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
PYTHON=${PROVISION_PYTHON:-/usr/bin/python3}           # the system interpreter (.venv is made from it)
read -r -a PIP <<<"${PROVISION_PIP:-$PYTHON -m pip}"
# sudo resets the environment (PYTHONPATH is dropped): the final check runs the
# imports through it, because that is where users saw `No module named 'sswitch_runtime'`.
read -r -a SUDO <<<"${PROVISION_SUDO:-sudo -n}"
APT_ETC=${PROVISION_APT_ETC:-/etc/apt}
OS_RELEASE=${PROVISION_OS_RELEASE:-/etc/os-release}
DRY_RUN=${PROVISION_DRY_RUN:-0}
RUN_TESTS=${PROVISION_RUN_TESTS:-1}
TOOLCHAIN=${PROVISION_TOOLCHAIN:-packages}
TOOLCHAIN_SCRIPT=${PROVISION_TOOLCHAIN_SCRIPT:-$REPO_DIR/scripts/build-p4-toolchain.sh}
read -r -a BMV2_SEARCH <<<"${PROVISION_BMV2_SEARCH:-/usr/lib /usr/local/lib /opt}"

P4UTILS_DIR=${PROVISION_P4UTILS_DIR:-/opt/p4-utils}
P4UTILS_URL=https://github.com/nsg-ethz/p4-utils.git
P4UTILS_COMMIT=83b118bbae530b31cc74e7fa32f9174f7c0a1184   # master, 2024-07-10
PTH_NAME=symphony-bmv2.pth      # names the directories holding BMv2's Python modules
EXPECTED_OS="ubuntu 22.04"

BASE_PACKAGES=(ca-certificates curl gnupg git make gcc python3-pip python3-venv)
# gcc: p4c runs the C preprocessor through `cc -E` on the P4 source.
# python3-thrift: the Thrift runtime that bmv2's sswitch_runtime/bm_runtime import.
P4LANG_PACKAGES=(p4lang-p4c p4lang-bmv2 p4lang-pi python3-thrift)
P4LANG_PROGRAMS=(simple_switch simple_switch_CLI p4c p4c-bm2-ss)
BMV2_IMPORTS="import sswitch_runtime, bm_runtime, bmpy_utils"
ALL_IMPORTS="import sswitch_runtime, bm_runtime, bmpy_utils, thrift, p4utils; from p4utils.utils.sswitch_thrift_API import SimpleSwitchThriftAPI"

say() { echo "provision: $*"; }
die() { echo "provision: FAILED: $*" >&2; exit 1; }

# step NAME: skip when check_NAME passes; else run do_NAME and require check_NAME after it.
step() {
    local name=$1
    if "check_${name//-/_}"; then
        say "skip $name (already done)"
    elif [ "$DRY_RUN" = 1 ]; then
        say "would-run $name"
    else
        say "run $name"
        "do_${name//-/_}"
        "check_${name//-/_}" || die "$name: ran, but its check still fails (see the output above)"
        say "done $name"
    fi
}

apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

packages_installed() {
    local pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || return 1
    done
}

programs_on_path() {
    local prog
    for prog in "$@"; do command -v "$prog" >/dev/null 2>&1 || return 1; done
}

os_field() { # os_field ID|VERSION_ID: the value from os-release, unquoted (no sourcing)
    sed -n "s/^$1=//p" "$OS_RELEASE" | head -n1 | tr -d "\"'"
}

# --- preconditions -------------------------------------------------------------------

check_os() {
    [ -r "$OS_RELEASE" ] || die "cannot read $OS_RELEASE"
    local found
    found="$(os_field ID) $(os_field VERSION_ID)"
    if [ "$found" != "$EXPECTED_OS" ]; then
        [ "${PROVISION_ALLOW_ANY_OS:-0}" = 1 ] \
            || die "this script targets Ubuntu 22.04 (p4-utils' grpcio 1.44 needs Python 3.10), found '$found'; set PROVISION_ALLOW_ANY_OS=1 to try anyway"
        say "WARNING: found '$found', not $EXPECTED_OS: the p4lang packages and p4-utils' pins may not install"
    fi
    if [ "$(id -u)" -ne 0 ] && [ "$DRY_RUN" != 1 ] && [ "${PROVISION_ALLOW_NONROOT:-0}" != 1 ]; then
        die "needs root (run: sudo $0)"
    fi
}

# --- install steps: check_X / do_X pairs ---------------------------------------------

check_base_packages() { packages_installed "${BASE_PACKAGES[@]}"; }
do_base_packages() {
    apt-get update -q
    apt_install "${BASE_PACKAGES[@]}"
}

p4lang_repo_line() {
    echo "deb http://download.opensuse.org/repositories/home:/p4lang/xUbuntu_$(os_field VERSION_ID)/ /"
}
check_p4lang_repo() {
    [ -s "$APT_ETC/trusted.gpg.d/home_p4lang.gpg" ] \
        && [ "$(cat "$APT_ETC/sources.list.d/home:p4lang.list" 2>/dev/null)" = "$(p4lang_repo_line)" ]
}
do_p4lang_repo() {
    # As in the p4lang/behavioral-model README ("Installing packaged versions of bmv2"):
    # the OBS project home:p4lang builds p4lang-p4c, p4lang-bmv2 and p4lang-pi for Ubuntu.
    # The apt line stays http as upstream gives it: download.opensuse.org redirects to
    # mirrors, and the packages are verified by the signed Release file, not by TLS.
    mkdir -p "$APT_ETC/sources.list.d" "$APT_ETC/trusted.gpg.d"
    curl -fsSL "https://download.opensuse.org/repositories/home:p4lang/xUbuntu_$(os_field VERSION_ID)/Release.key" \
        | gpg --dearmor >"$APT_ETC/trusted.gpg.d/home_p4lang.gpg.tmp"
    mv "$APT_ETC/trusted.gpg.d/home_p4lang.gpg.tmp" "$APT_ETC/trusted.gpg.d/home_p4lang.gpg"
    p4lang_repo_line >"$APT_ETC/sources.list.d/home:p4lang.list"
}

check_p4lang_packages() {
    packages_installed "${P4LANG_PACKAGES[@]}" && programs_on_path "${P4LANG_PROGRAMS[@]}"
}
do_p4lang_packages() {
    apt-get update -q
    apt_install "${P4LANG_PACKAGES[@]}"
}

# source: BMv2 and p4c from scripts/build-p4-toolchain.sh, whose own checks say
# whether anything is left to do (p4-utils comes from the steps below, as with
# the packages, with its pinned dependencies, which install on 22.04's Python 3.10)
TOOLCHAIN_PARTS=(--only bmv2 --only p4c)
check_toolchain_source() {
    local plan
    programs_on_path "${P4LANG_PROGRAMS[@]}" || return 1
    plan=$(bash "$TOOLCHAIN_SCRIPT" "${TOOLCHAIN_PARTS[@]}" --dry-run 2>/dev/null) || return 1
    ! grep -q ' would-run ' <<<"$plan"
}
do_toolchain_source() { bash "$TOOLCHAIN_SCRIPT" "${TOOLCHAIN_PARTS[@]}"; }

check_mininet() { programs_on_path mnexec && "$PYTHON" -c "import mininet.net" 2>/dev/null; }
do_mininet() {
    # Debian/Ubuntu's package, as scripts/setup.sh installs it; without recommends,
    # which would pull in Open vSwitch, unused here (switches are BMv2 or the twin).
    apt_install mininet
}

# Where the p4lang-bmv2 package put sswitch_runtime and bm_runtime.  Autotools
# installs them into $(pythondir), i.e. .../pythonX.Y/site-packages, which
# Debian/Ubuntu's python3 never reads (it reads dist-packages): that is the
# `No module named 'sswitch_runtime'` that p4-utils users report.  Ask dpkg
# first, then search, and never assume one layout.
bmv2_python_dirs() {
    local rel file dir
    # p4utils' thrift_API imports bmpy_utils too (installed beside the two packages)
    for rel in sswitch_runtime/__init__.py bm_runtime/__init__.py bmpy_utils.py; do
        file=$(dpkg -L p4lang-bmv2 2>/dev/null | grep -m1 "/${rel//./\\.}\$" || true)
        if [ -z "$file" ]; then
            file=$(find "${BMV2_SEARCH[@]}" -path "*/$rel" 2>/dev/null | sort | head -n1 || true)
        fi
        [ -n "$file" ] || return 1
        dir=$(dirname "$file")
        [ "$rel" = bmpy_utils.py ] || dir=$(dirname "$dir")
        echo "$dir"
    done | sort -u
}

site_dir_of() { "$1" -c 'import sysconfig; print(sysconfig.get_path("purelib"))'; }

# The .pth file sits in the interpreter's own site directory, which site.py reads
# at every start-up, whoever runs it, with or without sudo, with any environment.
pth_in_place() {
    local py=$1 dir
    [ -x "$py" ] || return 1
    dir=$(site_dir_of "$py") || return 1
    [ -s "$dir/$PTH_NAME" ] && "$py" -c "$BMV2_IMPORTS" 2>/dev/null
}
write_pth() {
    local py=$1 dir dirs
    dirs=$(bmv2_python_dirs) || die "p4lang-bmv2 is installed but its Python modules (sswitch_runtime, bm_runtime, bmpy_utils) were not found (searched dpkg -L p4lang-bmv2 and ${BMV2_SEARCH[*]})"
    dir=$(site_dir_of "$py")
    mkdir -p "$dir"
    printf '%s\n' "$dirs" >"$dir/$PTH_NAME"
    say "wrote $dir/$PTH_NAME -> $(echo "$dirs" | tr '\n' ' ')"
}

check_bmv2_python_path() { pth_in_place "$PYTHON"; }
do_bmv2_python_path() { write_pth "$PYTHON"; }

check_p4utils_clone() {
    [ "$(git -C "$P4UTILS_DIR" rev-parse HEAD 2>/dev/null)" = "$P4UTILS_COMMIT" ]
}
do_p4utils_clone() {
    # Pinned, so that every VM gets the same p4-utils.  Its install.sh does
    # `pip3 install -e .`, builds the optional `mx` helper (unused here) and fetches
    # a path-fix script from GitHub at run time; we do the pip part ourselves and
    # replace the path fix with the .pth above.
    [ -d "$P4UTILS_DIR/.git" ] || git clone -q "$P4UTILS_URL" "$P4UTILS_DIR"
    git -C "$P4UTILS_DIR" checkout -q "$P4UTILS_COMMIT" 2>/dev/null \
        || { git -C "$P4UTILS_DIR" fetch -q origin && git -C "$P4UTILS_DIR" checkout -q "$P4UTILS_COMMIT"; }
}

check_p4utils() { "$PYTHON" -c "import p4utils" 2>/dev/null; }
do_p4utils() {
    # Into the system interpreter (root, Ubuntu 22.04: /usr/local/lib/python3.10/dist-packages),
    # so that `sudo python3` and the project's .venv (--system-site-packages) both see it.
    "${PIP[@]}" install -q -e "$P4UTILS_DIR"
}

# The synced tree belongs to the vagrant user; git (>= 2.35.2, and Ubuntu's patched
# 2.34) refuses to read a repository owned by someone else, so root's `git describe`
# for a run's meta.json would fail without this.
check_git_safe_directory() {
    git config --system --get-all safe.directory 2>/dev/null | grep -qxF "$REPO_DIR"
}
do_git_safe_directory() { git config --system --add safe.directory "$REPO_DIR"; }

check_project_setup() { make -C "$REPO_DIR" -q setup >/dev/null 2>&1; }
do_project_setup() { make -C "$REPO_DIR" setup; }

# The .venv sees the system site-packages (and so the .pth above) already; its own
# .pth keeps it working even if someone recreates it without --system-site-packages.
check_venv_bmv2_python_path() { pth_in_place "$REPO_DIR/.venv/bin/python"; }
do_venv_bmv2_python_path() { write_pth "$REPO_DIR/.venv/bin/python"; }

check_p4_build() {
    local json="$REPO_DIR/build/bmv2/symphony.json"
    [ -s "$json" ] || return 1
    # done when no P4 source is newer than the compiled program
    [ -z "$(find "$REPO_DIR/p4" -name '*.p4' -newer "$json" 2>/dev/null | head -n1)" ]
}
do_p4_build() {
    make -C "$REPO_DIR" p4 || die "make p4 failed (the compiler output is above)"
}

# --- verification (always runs) ------------------------------------------------------

verify_imports() {
    local py
    for py in "$PYTHON" "$REPO_DIR/.venv/bin/python"; do
        if ! "${SUDO[@]}" "$py" -c "$ALL_IMPORTS"; then
            die "under '${SUDO[*]}', $py cannot import BMv2's Thrift modules and p4utils (the traceback is above); the .pth files named $PTH_NAME should point at the directory holding sswitch_runtime"
        fi
    done
    say "verified: '${SUDO[*]} python3' and .venv import sswitch_runtime, bm_runtime, bmpy_utils, thrift, p4utils"
}

main() {
    case $TOOLCHAIN in
        packages|source) ;;
        *) die "PROVISION_TOOLCHAIN (SYMPHONY_VM_TOOLCHAIN) is packages or source, not '$TOOLCHAIN'" ;;
    esac
    say "repository $REPO_DIR, python $PYTHON, toolchain $TOOLCHAIN$([ "$DRY_RUN" = 1 ] && echo ', dry run: nothing is changed')"
    check_os
    step base-packages
    if [ "$TOOLCHAIN" = packages ]; then
        step p4lang-repo
        step p4lang-packages
    else
        step toolchain-source
    fi
    step mininet
    step bmv2-python-path
    step p4utils-clone
    step p4utils
    step git-safe-directory
    step project-setup
    step venv-bmv2-python-path
    step p4-build
    if [ "$DRY_RUN" = 1 ]; then
        say "would-verify sudo imports"
        [ "$RUN_TESTS" = 1 ] && say "would-verify make test"
        return 0
    fi
    verify_imports
    if [ "$RUN_TESTS" = 1 ]; then
        say "run make test (the BMv2-only tests run here: simple_switch and p4c are installed)"
        make -C "$REPO_DIR" test || die "make test failed (see the test report above)"
    fi
    say "ready: cd $REPO_DIR && sudo make demo TARGET=bmv2"
}

main "$@"
