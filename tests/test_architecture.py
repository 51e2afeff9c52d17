"""The direction of dependencies, as docs/design.md states it:

    contract  <-  hosts, topologies, analysis  <-  experiments

contract/ imports nothing of the project; hosts/, topologies/ and analysis/
import only contract/; experiments/ may import everything.  No module takes
part in an import cycle, counting imports inside functions too.

engine/, the compiled packet engine (the Python module symphony_engine),
has a room of its own beside contract/: it imports nothing of the project,
in Python or from C++, and only experiments/ (experiments/sim composes it)
imports it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.harness import REPO

PACKAGES = ("contract", "hosts", "topologies", "analysis", "experiments")
ALLOWED = {
    "contract": set(),
    "hosts": {"contract"},
    "topologies": {"contract"},
    "analysis": {"contract"},
    "experiments": {"contract", "hosts", "topologies", "analysis"},
}


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}


def imports_of(path: Path, modules: dict[str, Path], root: Path = REPO) -> set[str]:
    """Project modules a file imports, anywhere in it (``from pkg import mod``
    counts as importing pkg.mod when that is a module)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(path, modules) for name, path in modules.items()}


def test_packages_import_only_what_lies_below_them():
    wrong = []
    for module, deps in graph().items():
        top = module.split(".")[0]
        for dep in deps:
            other = dep.split(".")[0]
            if other != top and other not in ALLOWED[top]:
                wrong.append(f"{module} imports {dep}")
    assert not wrong, "\n".join(sorted(wrong))


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(g.get(node, ())):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(g):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_module_takes_part_in_an_import_cycle():
    # a package's __init__ importing its own modules is not a cycle of logic
    g = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in graph().items()}
    cycle = find_cycle(g)
    assert cycle is None, " -> ".join(cycle)


def test_the_checker_sees_function_local_and_relative_imports(tmp_path):
    modules = {"hosts.agent": tmp_path / "a.py", "topologies.network.lab": tmp_path / "b.py"}
    src = tmp_path / "hosts" / "x.py"
    src.parent.mkdir()
    src.write_text("def f():\n    from topologies.network import lab\n")
    assert imports_of(src, modules, tmp_path) == {"topologies.network.lab"}
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None



ENGINE = REPO / "engine"
ENGINE_MODULE = "symphony_engine"


def _imported_tops(path: Path) -> set[str]:
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            tops.add((node.module or "").split(".")[0])
    return tops


def test_the_engine_imports_nothing_of_the_project():
    wrong = [f"{p.relative_to(REPO)} imports {t}" for p in ENGINE.rglob("*.py") if "build" not in p.parts
             for t in _imported_tops(p) & set(PACKAGES)]
    # C++ reaches Python modules only through nanobind's module_::import_
    project = re.compile(r'\bimport_\s*\(\s*"(' + "|".join(PACKAGES) + r')\b')
    wrong += [f"{p.relative_to(REPO)} imports a project module" for p in (ENGINE / "src").iterdir()
              if project.search(p.read_text())]
    assert not wrong, "\n".join(wrong)


def test_only_experiments_import_the_engine():
    wrong = [f"{m} imports {ENGINE_MODULE}" for m, p in project_modules().items()
             if not m.startswith("experiments") and ENGINE_MODULE in _imported_tops(p)]
    assert not wrong, "\n".join(wrong)
