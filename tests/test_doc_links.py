"""Every link and command in the docs works as written (issue 49).

- Each relative link in README.md, docs/**/*.md and every folder's
  README.md names a file or folder of the repository, and a heading of the
  page where it names one (`page.md#heading`, GitHub's anchors).
- Each `python3 -m MODULE` / `.venv/bin/python -m MODULE` that the README,
  the manual (docs/*.md) or a folder README names runs `--help` with exit
  0, and knows every flag the doc gives it (with its subcommand's help
  where it names one).  The dated log (docs/log/) keeps its commands as
  they were run, so only its links are checked.
- Each `make TARGET` they name is a target of the Makefile.
- The README stays a front door: at most 150 lines, and no reference page
  (the README, docs/*.md but the results, a folder README) carries dated
  history: a date belongs in docs/results.md or the dated log.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import REPO

SKIP_DIRS = {"build", "results", "node_modules", "__pycache__"}


def folder_readmes() -> list[Path]:
    found = []
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS
                   and not d.endswith(".egg-info")]
        if "README.md" in files:
            found.append(Path(root) / "README.md")
    return found


def doc_files() -> list[Path]:
    docs = sorted((REPO / "docs").rglob("*.md"))
    return sorted({REPO / "README.md", *docs, *folder_readmes()})


def manual_files() -> list[Path]:
    """The pages whose commands must run as written: not the dated log."""
    log = REPO / "docs" / "log"
    return [p for p in doc_files() if log not in p.parents]


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


FENCE = re.compile(r"^(```|~~~)")


def without_fences(text: str) -> tuple[str, list[str]]:
    """(the text with its fenced blocks blanked, the blocks' lines)."""
    prose, code, in_fence = [], [], False
    for line in text.split("\n"):
        if FENCE.match(line.strip()):
            in_fence = not in_fence
            prose.append("")
            continue
        if in_fence:
            code.append(line)
            prose.append("")
        else:
            prose.append(line)
    return "\n".join(prose), code


INLINE = re.compile(r"(?<!`)`([^`]+)`(?!`)")


def split_code(text: str) -> tuple[str, list[str]]:
    """(the prose with fenced blocks and inline code blanked, the code:
    each fenced block's lines and each inline span, whitespace collapsed)."""
    body, code = without_fences(text)
    code += [" ".join(s.split()) for s in INLINE.findall(body)]
    return INLINE.sub("``", body), code


# --- links ---------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text without markup, lowercased,
    punctuation but '-' and '_' dropped, spaces as '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    prose, _ = without_fences(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for line in prose.split("\n"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


def broken_links(doc: Path) -> list[str]:
    prose, _ = split_code(doc.read_text(encoding="utf-8"))
    problems = []
    for target in LINK.findall(prose):
        if SCHEME.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc
        if not dest.is_relative_to(REPO):
            problems.append(f"{target}: outside the repository")
        elif not dest.exists():
            problems.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{target}: no heading #{anchor} in {rel(dest)}")
    return problems


@pytest.mark.parametrize("doc", doc_files(), ids=rel)
def test_every_relative_link_resolves(doc):
    assert broken_links(doc) == []


def test_the_link_check_sees_what_it_checks(tmp_path):
    page = REPO / "docs" / "cli.md"
    assert "exit-codes" in anchors(page)
    assert slug("`[[jobs]]` placement") == "jobs-placement"
    assert slug("Starting together (`--start-file`)") == "starting-together---start-file"
    assert {REPO / "README.md", REPO / "experiments" / "README.md", REPO / "p4" / "README.md"} <= set(doc_files())


# --- commands --------------------------------------------------------------------------

MODULE = re.compile(r"(?:(?<![\w/.-])python3?|\.venv/bin/python)\s+-m\s+([A-Za-z_][\w.]*)([^;&>#]*)")
PIPE = re.compile(r"\s\|\s")          # a shell pipe; `auto|bmv2` is a synopsis's choice
FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")
MAKE = re.compile(r"(?:^|[\s;(&|`])make((?:[ \t]+[^\s;&|()`]+)*)")
MAKE_ARG_OPTIONS = {"-f", "-I", "-o", "-W"}


def _code(doc: Path) -> list[str]:
    """The doc's code lines, comments cut, an indented or backslash-continued
    line joined to the one before (a synopsis over several lines)."""
    _, code = split_code(doc.read_text(encoding="utf-8"))
    joined: list[str] = []
    for line in code:
        text = line.split(" #")[0].rstrip()
        if joined and (line[:1] in (" ", "\t") or joined[-1].endswith("\\")):
            joined[-1] = joined[-1].rstrip("\\") + " " + text.strip()
        else:
            joined.append(text)
    return joined


def commands() -> dict[tuple[str, str | None], set[str]]:
    """(module, the word after it) -> the flags the docs give it, with the
    docs that name it."""
    out: dict[tuple[str, str | None], set[str]] = {}
    for doc in manual_files():
        for line in _code(doc):
            for m in MODULE.finditer(PIPE.sub(" ; ", line)):
                module, rest = m.group(1), m.group(2)
                if any(part.isupper() for part in module.split(".")):
                    continue            # a placeholder: experiments.bench.NAME
                words = rest.split()
                word = words[0] if words and re.fullmatch(r"[a-z][a-z0-9_-]*", words[0]) else None
                key = (module, word)
                out.setdefault(key, set()).update(f"flag:{f}" for f in FLAG.findall(rest))
                out[key].add(f"doc:{rel(doc)}")
    return out


@functools.cache
def help_text(*argv: str) -> tuple[int, str]:
    r = subprocess.run([sys.executable, "-m", *argv, "--help"], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    return r.returncode, r.stdout + r.stderr


def subcommands(module: str) -> set[str]:
    _, text = help_text(module)
    m = re.search(r"\{([\w,-]+)\}", text)
    return set(m.group(1).split(",")) if m else set()


COMMANDS = commands()


@pytest.mark.parametrize("key", sorted(COMMANDS, key=str), ids=lambda k: " ".join(x for x in k if x))
def test_every_module_the_docs_name_runs_and_knows_its_flags(key):
    module, word = key
    docs = sorted(x[4:] for x in COMMANDS[key] if x.startswith("doc:"))
    code, text = help_text(module)
    assert code == 0, f"python3 -m {module} --help exits {code} (named in {docs}): {text[-500:]}"
    if word in subcommands(module):
        code, text = help_text(module, word)
        assert code == 0, f"python3 -m {module} {word} --help exits {code} (named in {docs})"
    unknown = sorted(f[5:] for f in COMMANDS[key] if f.startswith("flag:")
                     and not re.search(rf"(?<![\w-]){re.escape(f[5:])}(?![\w-])", text))
    assert not unknown, f"python3 -m {module} {word or ''}: no such flag {unknown} (named in {docs})"


def make_targets_of(makefile: Path) -> set[str]:
    targets = set()
    for line in makefile.read_text(encoding="utf-8").split("\n"):
        m = re.match(r"^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:(?![=:])", line)
        if m:
            targets.update(t for t in m.group(1).split() if not t.startswith("."))
    return targets


def make_targets_named() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for doc in manual_files():
        for line in _code(doc):
            for m in MAKE.finditer(PIPE.sub(" ; ", line)):
                words, skip = m.group(1).split(), False
                if "-C" in words:
                    continue            # another tree's Makefile (BMv2's, built by hand)
                for w in words:
                    if skip:
                        skip = False
                    elif w in MAKE_ARG_OPTIONS:
                        skip = True
                    elif w.startswith("-") or "=" in w:
                        continue
                    else:
                        if re.fullmatch(r"[a-z][\w.-]*", w):
                            out.setdefault(w, set()).add(rel(doc))
                        break
    return out


def test_every_make_target_the_docs_name_exists():
    targets = make_targets_of(REPO / "Makefile")
    named = make_targets_named()
    assert {"demo", "test", "setup"} <= named.keys(), "the README names make demo and make test"
    assert {t: sorted(d) for t, d in named.items() if t not in targets} == {}


def test_the_command_check_sees_what_it_checks():
    assert ("experiments", "run") in COMMANDS and ("hosts.agent", None) in COMMANDS
    assert "flag:--scale" in COMMANDS[("experiments", "run")]
    assert subcommands("experiments") == {"run", "check", "model", "net"}
    assert {"demo", "test", "p4", "clean-net"} <= make_targets_of(REPO / "Makefile")


def test_the_readme_is_a_front_door():
    lines = (REPO / "README.md").read_text(encoding="utf-8").split("\n")
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; reference and results belong under docs/"


DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


@pytest.mark.parametrize("doc", [p for p in manual_files() if p != REPO / "docs" / "results.md"], ids=rel)
def test_reference_pages_carry_no_dated_history(doc):
    prose, code = split_code(doc.read_text(encoding="utf-8"))
    text = LINK.sub("", prose) + "\n".join(code)      # a link to a dated log file is no date of the page's
    assert DATE.findall(text) == [], "findings and their dates go to docs/results.md and docs/log/"
