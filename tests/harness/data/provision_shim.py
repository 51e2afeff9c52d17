#!/usr/bin/python3
"""Stand-ins for the commands scripts/provision-vm.sh runs (apt-get, dpkg-query,
dpkg, curl, gpg, git, pip, make), for tests/scripts/test_provision_vm.py.

One program, called through symlinks named after the command.  Every call is
appended to $SHIM_LOG (one JSON list per line).  "Installing" creates fake files
in a temporary world: programs in $FAKE_BIN, Python modules in $FAKE_SITE (the
site-packages of the interpreter that plays the system python3), and BMv2's
Python modules under $FAKE_ROOT/usr/lib/python3.10/site-packages, the directory
that autotools picks and Ubuntu's python3 does not read, so that only the
script's .pth file can make them importable.
"""
import json
import os
import sys
from pathlib import Path

ENV = os.environ
STATE = Path(ENV["FAKE_STATE"])
SITE = Path(ENV["FAKE_SITE"])
BIN = Path(ENV["FAKE_BIN"])
BMV2_PY = Path(ENV["FAKE_ROOT"]) / "usr/lib/python3.10/site-packages"


def write(path: Path, text: str = "", mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def program(name: str) -> Path:
    return write(BIN / name, "#!/bin/sh\nexit 0\n", 0o755)


def install_package(pkg: str) -> None:
    files = []
    if pkg == "p4lang-bmv2":
        files += [program("simple_switch"), program("simple_switch_CLI")]
        if not ENV.get("FAKE_BMV2_NO_PY"):
            files.append(write(BMV2_PY / "sswitch_runtime/__init__.py",
                               "import thrift\nclass SimpleSwitch:\n    pass\n"))
            files.append(write(BMV2_PY / "bm_runtime/__init__.py", ""))
            files.append(write(BMV2_PY / "bmpy_utils.py", ""))
    elif pkg == "p4lang-p4c":
        files += [program("p4c"), program("p4c-bm2-ss")]
    elif pkg == "python3-thrift":
        files.append(write(SITE / "thrift/__init__.py", ""))
    elif pkg == "mininet":
        files += [program("mnexec"), write(SITE / "mininet/__init__.py", ""),
                  write(SITE / "mininet/net.py", "")]
    write(STATE / "dpkg" / pkg, "".join(f"{f}\n" for f in files))


def apt_get(args):
    if args[0] == "install":
        for pkg in (a for a in args[1:] if not a.startswith("-")):
            install_package(pkg)
    return 0


def dpkg_query(args):
    if (STATE / "dpkg" / args[-1]).exists():
        print("install ok installed", end="")
        return 0
    print(f"dpkg-query: no packages found matching {args[-1]}", file=sys.stderr)
    return 1


def dpkg(args):
    listing = STATE / "dpkg" / args[-1]
    if args[0] == "-L" and listing.exists() and not ENV.get("FAKE_DPKG_L_EMPTY"):
        print(listing.read_text(), end="")
        return 0
    return 1


def git(args):
    if args[0] == "clone":
        repo = Path(args[-1])
        write(repo / ".git/HEAD_COMMIT", "0" * 40)
        write(repo / "setup.py", "")
        write(repo / "p4utils/__init__.py", "")
        write(repo / "p4utils/utils/__init__.py", "")
        # like the real one: importing the Thrift API needs BMv2's sswitch_runtime
        write(repo / "p4utils/utils/sswitch_thrift_API.py",
              "from sswitch_runtime import SimpleSwitch\nimport bm_runtime, bmpy_utils\n"
              "class SimpleSwitchThriftAPI:\n    pass\n")
        return 0
    if args[:2] == ["config", "--system"]:
        safe = STATE / "git-safe-directories"
        if args[2] == "--add":
            with open(safe, "a") as f:
                f.write(args[-1] + "\n")
        elif safe.exists():
            print(safe.read_text(), end="")
        return 0
    assert args[0] == "-C", args
    repo, cmd = Path(args[1]), args[2:]
    head = repo / ".git/HEAD_COMMIT"
    if cmd == ["rev-parse", "HEAD"]:
        if not head.exists():
            return 128
        print(head.read_text())
        return 0
    if cmd[0] == "checkout":
        head.write_text(cmd[-1])
    return 0


def pip(args):
    assert args[:1] == ["install"] and "-e" in args, args
    write(SITE / "__editable__.p4utils.pth", args[-1] + "\n")  # as an editable install does
    return 0


def make(args):
    repo = Path(args[args.index("-C") + 1])
    target = args[-1]
    venv = repo / ".venv"
    if target == "setup":
        if "-q" in args:
            return 0 if (venv / ".setup-stamp").exists() else 1
        # a real venv whose site-packages also reads the fake system site, as
        # --system-site-packages makes the project's .venv read the system's
        os.spawnv(os.P_WAIT, ENV["FAKE_PY"], [ENV["FAKE_PY"], "-m", "venv", "--without-pip", str(venv)])
        site = next(venv.glob("lib/python3*/site-packages"))
        write(site / "_system_site.pth", f"import site; site.addsitedir({str(SITE)!r})\n")
        write(venv / ".setup-stamp")
        return 0
    if target == "p4":
        write(repo / "build/bmv2/symphony.json", "{}")
        return 0
    if target == "test":
        print("fake make test: all passed")
        return int(ENV.get("FAKE_MAKE_TEST_RC", "0"))
    return 2


def curl(args):
    print("-----BEGIN PGP PUBLIC KEY BLOCK----- fake")
    return 0


def gpg(args):
    sys.stdout.write(sys.stdin.read())
    return 0


COMMANDS = {"apt-get": apt_get, "dpkg-query": dpkg_query, "dpkg": dpkg, "git": git,
            "pip": pip, "make": make, "curl": curl, "gpg": gpg}

if __name__ == "__main__":
    name = Path(sys.argv[0]).name
    with open(ENV["SHIM_LOG"], "a") as log:
        log.write(json.dumps([name] + sys.argv[1:]) + "\n")
    sys.exit(COMMANDS[name](sys.argv[1:]))
