"""No import cycles among Loadout's packages, lazy imports included.

import-linter's layer contract sees only imports between layers; a cycle inside one
package (``a`` imports ``b`` at the top, ``b`` imports ``a`` inside a function or under
``TYPE_CHECKING``) passes it. This check builds the whole module graph with grimp (the
graph library import-linter uses, which reads every import statement of a module, at any
depth) and fails listing each cycle with the lines that make it.
"""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import grimp
import pytest

PACKAGES = ("planner", "engine", "app", "loadout")


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of modules that import each other (directly or through others), each
    sorted; modules on no cycle are left out. Tarjan's algorithm, without recursion."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:  # hand the low link to the caller
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in edges[node]:
                    groups.append(sorted(group))
    return sorted(groups)


def shortest_cycle(graph: grimp.ImportGraph, group: list[str]) -> list[str]:
    """One shortest cycle through the first module of ``group`` (start repeated at the end)."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph.find_modules_directly_imported_by(node) & members):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"{group} is not a cycle")


def describe(graph: grimp.ImportGraph, group: list[str]) -> str:
    """The cycle through ``group``, each import with its line, for a failure message."""
    cycle = shortest_cycle(graph, group)
    lines = [" -> ".join(cycle)]
    for importer, imported in itertools.pairwise(cycle):
        for detail in graph.get_import_details(importer=importer, imported=imported):
            lines.append(f"    {importer}:{detail['line_number']}  {detail['line_contents']}")
    if len(group) > len(cycle) - 1:
        lines.append(f"    (one of the cycles among: {', '.join(group)})")
    return "\n".join(lines)


def import_cycles(*packages: str) -> list[str]:
    """Every import cycle among ``packages``, described, or [] when there is none."""
    graph = grimp.build_graph(*packages, cache_dir=None)
    return [describe(graph, group) for group in strongly_connected(graph)]


def test_no_import_cycle_among_the_packages() -> None:
    cycles = import_cycles(*PACKAGES)
    print("\n\n".join(cycles))
    assert not cycles, f"{len(cycles)} import cycle(s):\n\n" + "\n\n".join(cycles)


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package ``loadout_cycle_probe`` on sys.path whose modules ``a``, ``b`` and ``c``
    import each other in a ring, one of them only inside a function, beside a module
    ``leaf`` that is on no cycle."""
    package = tmp_path / "loadout_cycle_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "leaf.py").write_text("X = 1\n")
    (package / "a.py").write_text("from loadout_cycle_probe import b, leaf\n")
    (package / "b.py").write_text("import loadout_cycle_probe.c\n")
    (package / "c.py").write_text(textwrap.dedent("""\
        def late():
            from loadout_cycle_probe.a import leaf
            return leaf
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return package.name


def test_a_planted_cycle_is_reported_with_its_lazy_import(planted: str) -> None:
    (report,) = import_cycles(planted)
    print(report)
    first = report.splitlines()[0]
    assert first == ("loadout_cycle_probe.a -> loadout_cycle_probe.b -> "
                     "loadout_cycle_probe.c -> loadout_cycle_probe.a")
    assert "loadout_cycle_probe.c:2  from loadout_cycle_probe.a import leaf" in report
    assert "leaf ->" not in report


def test_the_check_is_quiet_once_the_cycle_is_broken(planted: str, tmp_path: Path) -> None:
    (tmp_path / planted / "c.py").write_text("def late():\n    return 1\n")
    assert import_cycles(planted) == []
