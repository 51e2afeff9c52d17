#!/usr/bin/python3
"""Stand-ins for the commands scripts/build-p4-toolchain.sh runs (apt-get,
dpkg-query, dpkg-buildflags, git, make, cmake, ldconfig), for
tests/scripts/test_build_p4_toolchain.py.

One program, called through symlinks named after the command.  Every call is
appended to $SHIM_LOG (one JSON list per line, with the directory it ran in).
"Cloning" makes a fake source tree (BMv2's autogen.sh writes a configure that
records its arguments); "building" does nothing; "installing" writes fake
programs under the prefix that configure/cmake were given, and BMv2's Python
modules under PREFIX/lib/python3.X/site-packages, where the system python3 does
not look, so that only the script's .pth makes them importable.
"""
import json
import os
import sys
from pathlib import Path

ENV = os.environ
STATE = Path(ENV["FAKE_STATE"])
HEADS = {"behavioral-model": "b" * 40, "p4c": "c" * 40, "p4runtime": "d" * 40, "p4-utils": "e" * 40}


def write(path: Path, text: str = "", mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


CONFIGURE = """#!/bin/sh
# fake configure: remember the prefix and the arguments, make the subdirectories
log="$SHIM_LOG"
printf '["configure"' >>"$log"; for a in "$@"; do printf ', "%s"' "$a" >>"$log"; done; printf ']\\n' >>"$log"
for a in "$@"; do case $a in --prefix=*) echo "${a#--prefix=}" >.fake-prefix ;; esac; done
mkdir -p thrift_src third_party proto src include targets/simple_switch tools
"""


def make_tree(name: str, where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    if name == "behavioral-model":
        write(where / "autogen.sh", f"#!/bin/sh\ncat >configure <<'EOF'\n{CONFIGURE}EOF\nchmod +x configure\n", 0o755)
    elif name == "p4-utils":
        write(where / "setup.py", "")
        write(where / "p4utils/__init__.py", "")
        write(where / "p4utils/utils/__init__.py", "")
        write(where / "p4utils/utils/sswitch_thrift_API.py",
              "import sswitch_runtime\nclass SimpleSwitchThriftAPI:\n    pass\n")
    else:
        write(where / "CMakeLists.txt", "")


def program(path: Path, out: str = "") -> None:
    write(path, f"#!/bin/sh\necho '{out}'\nexit 0\n", 0o755)


def prefix_here() -> Path:
    return Path(Path(".fake-prefix").read_text().strip())


def apt_get(args):
    if args[0] == "install":
        for pkg in (a for a in args[1:] if not a.startswith("-")):
            write(STATE / "dpkg" / pkg)
    return 0


def dpkg_query(args):
    if (STATE / "dpkg" / args[-1]).exists():
        print("install ok installed", end="")
        return 0
    return 1


def dpkg_buildflags(args):
    print({"CFLAGS": "-g -O2 -fstack-protector-strong", "CXXFLAGS": "-g -O2 -fstack-protector-strong",
           "CPPFLAGS": "-D_FORTIFY_SOURCE=2", "LDFLAGS": "-Wl,-z,relro -Wl,-z,now"}[args[-1]])
    return 0


def git(args):
    if args[0] == "clone":
        repo = Path(args[-1])
        make_tree(Path(args[-2]).stem, repo)
        write(repo / ".git" / "HEAD", "f" * 40)
        return 0
    if args[0] == "-C":
        repo, args = Path(args[1]), args[2:]
        head = repo / ".git" / "HEAD"
        if not head.exists():
            print(f"fatal: not a git repository: {repo}", file=sys.stderr)
            return 128
        if args[:2] == ["rev-parse", "HEAD"]:
            print(head.read_text())
            return 0
        if args[0] == "checkout":
            head.write_text(args[-1])
            return 0
        return 0
    return 0


def make(args):
    if "install" not in args:
        return 0
    sub = args[args.index("-C") + 1]
    prefix = prefix_here()
    site = prefix / "lib/python3.11/site-packages"
    if sub == "targets/simple_switch" and not ENV.get("FAKE_NO_SIMPLE_SWITCH"):
        program(prefix / "bin/simple_switch", "1.15.5-fake")
        program(prefix / "bin/simple_switch_CLI")
        write(site / "sswitch_runtime/__init__.py", "")
    elif sub == "thrift_src":
        write(site / "bm_runtime/__init__.py", "")
    elif sub == "tools":
        write(site / "bmpy_utils.py", "")
    return 0


def cmake(args):
    if "-S" in args:
        for a in args:
            if a.startswith("-DCMAKE_INSTALL_PREFIX="):
                write(Path(args[args.index("-B") + 1]) / ".fake-prefix", a.split("=", 1)[1])
    elif args[0] == "--install":
        prefix = Path((Path(args[1]) / ".fake-prefix").read_text().strip())
        for name in ("p4c", "p4test", "p4c-bm2-ss"):
            program(prefix / "bin" / name, "p4c 1.2.4.8-fake")
    return 0


def main():
    name = Path(sys.argv[0]).name
    args = sys.argv[1:]
    with open(ENV["SHIM_LOG"], "a") as log:
        log.write(json.dumps([name, *args]) + "\n")
    if name == "toolchain_shim.py" and args[:1] == ["--make-tree"]:   # used by the tests for --src trees
        make_tree(args[1], Path(args[2]))
        return 0
    handler = {"apt-get": apt_get, "dpkg-query": dpkg_query, "dpkg-buildflags": dpkg_buildflags,
               "git": git, "make": make, "cmake": cmake}.get(name)
    return handler(args) if handler else 0


if __name__ == "__main__":
    sys.exit(main())
