"""The layer map (docs/LAYERS.md) holds: no module imports across an edge the map does not allow,
and no two modules import each other, directly or through others."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "bisectk"

# layer -> layers it may import (a layer is a module or a package, matched by prefix)
ALLOWED = {
    "bisectk.errors": {"bisectk.exitcodes"}, "bisectk.exitcodes": set(), "bisectk.outcome": set(), "bisectk.procstat": set(),
    "bisectk.stuck": set(), "bisectk.timeouts": set(), "bisectk.contents": set(), "bisectk.slowrule": set(),
    "bisectk.expr": {"bisectk.errors"},
    "bisectk.specvalues": set(), "bisectk.names": set(),
    "bisectk.spec": {"bisectk.errors", "bisectk.expr", "bisectk.contents", "bisectk.timeouts", "bisectk.specvalues"},
    "bisectk.events": {"bisectk.outcome"},
    "bisectk.ledger": {"bisectk.errors", "bisectk.outcome", "bisectk.procstat", "bisectk.ledger"},
    "bisectk.ledger_check": {"bisectk.errors", "bisectk.ledger", "bisectk.engine.records", "bisectk.engine.gitlog",
                             "bisectk.report"},
    "bisectk.search": {"bisectk.outcome", "bisectk.search"},
    "bisectk.run": {"bisectk.errors", "bisectk.outcome", "bisectk.contents", "bisectk.spec", "bisectk.specvalues",
                    "bisectk.events", "bisectk.ledger", "bisectk.procstat", "bisectk.stuck", "bisectk.timeouts", "bisectk.slowrule", "bisectk.run"},
    "bisectk.ptx": {"bisectk.errors", "bisectk.outcome", "bisectk.spec", "bisectk.run", "bisectk.ptx"},
    "bisectk.evidence": {"bisectk.errors", "bisectk.outcome", "bisectk.spec", "bisectk.run", "bisectk.ptx"},
    "bisectk.spaces": {"bisectk.errors", "bisectk.outcome", "bisectk.procstat", "bisectk.contents", "bisectk.spec", "bisectk.run",
                       "bisectk.names", "bisectk.spaces"},
    "bisectk.engine": {"bisectk.errors", "bisectk.exitcodes", "bisectk.outcome", "bisectk.expr", "bisectk.contents", "bisectk.spec", "bisectk.specvalues",
                       "bisectk.procstat", "bisectk.stuck", "bisectk.names", "bisectk.timeouts", "bisectk.slowrule",
                       "bisectk.events", "bisectk.ledger", "bisectk.search", "bisectk.run", "bisectk.ptx",
                       "bisectk.evidence", "bisectk.spaces", "bisectk.engine"},
    "bisectk.report": {"bisectk.errors", "bisectk.exitcodes", "bisectk.outcome", "bisectk.stuck", "bisectk.names", "bisectk.timeouts",
                       "bisectk.spec", "bisectk.specvalues", "bisectk.slowrule",
                       "bisectk.events",
                       "bisectk.engine.records", "bisectk.report"},
    "bisectk.demo": {"bisectk.errors"},
    "bisectk.cli": {"bisectk"}, "bisectk.cli_common": {"bisectk"}, "bisectk.cli_tools": {"bisectk"},
    "bisectk.cli_run": {"bisectk"}, "bisectk.cli_ablate": {"bisectk"}, "bisectk.cli_diff": {"bisectk"},
    "bisectk.cli_history": {"bisectk"}, "bisectk.cli_bisect": {"bisectk"}, "bisectk.cli_triage": {"bisectk"},
    "bisectk.cli_replay": {"bisectk"},
    "bisectk.__main__": {"bisectk"}, "bisectk": {"bisectk"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in found if m.startswith("bisectk.")}   # `from bisectk import x` counts as bisectk.x


def layer_of(name: str) -> str:
    best = max((k for k in ALLOWED if name == k or name.startswith(k + ".")), key=len, default=None)
    assert best is not None, f"{name} belongs to no layer of docs/LAYERS.md"
    return best


def modules() -> dict[str, set[str]]:
    known = {module_name(p) for p in PKG.rglob("*.py")}
    graph = {}
    for p in PKG.rglob("*.py"):
        # `from bisectk.x import y` names module bisectk.x.y only when such a module exists
        graph[module_name(p)] = {m for m in imports(p) if m in known}
    return graph


def allowed(src: str, dst: str) -> bool:
    return any(dst == a or dst.startswith(a + ".") for a in ALLOWED[layer_of(src)])


def test_every_import_follows_the_layer_map():
    bad = sorted((src, dst) for src, deps in modules().items() for dst in deps
                 if dst != src and not allowed(src, dst) and not (src == "bisectk" and dst.startswith("bisectk")))
    assert not bad, "imports across the layer map (docs/LAYERS.md): " + ", ".join(f"{a} -> {b}" for a, b in bad)


def test_no_import_circle():
    graph = {m: {d for d in deps if d != m and not m.startswith(d + ".")} for m, deps in modules().items()}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, stack: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle.extend(stack[stack.index(nxt):] + [node, nxt] if nxt in stack else [node, nxt])
                return True
            if state.get(nxt) is None and visit(nxt, stack + [node]):
                return True
        state[node] = 2
        return False
    for m in sorted(graph):
        if state.get(m) is None and visit(m, []):
            break
    assert not cycle, "import circle: " + " -> ".join(cycle)


def test_the_map_is_enforced():
    """The checker itself: an edge the map forbids is caught."""
    assert not allowed("bisectk.search.group", "bisectk.run.process")
    assert not allowed("bisectk.report.ablation", "bisectk.engine.ablate")
    assert allowed("bisectk.report.ablation", "bisectk.engine.records")
    assert allowed("bisectk.engine.ablate", "bisectk.search")


OPTIONAL = {"ray": {"bisectk.run.cluster", "bisectk.run.rayhead"}}   # optional dependencies and the modules that may import each


def test_optional_dependencies_stay_in_their_module():
    """Ray is an extra: only bisectk/run/cluster.py (the actors) and run/rayhead.py (reaching or
    starting the cluster) import it, and only inside functions, so
    bisectk imports and runs without it (docs/LAYERS.md)."""
    for p in PKG.rglob("*.py"):
        tree = ast.parse(p.read_text())
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for name in names:
                dep = name.split(".")[0]
                if dep in OPTIONAL:
                    assert module_name(p) in OPTIONAL[dep], f"{module_name(p)} imports {dep}"
                    assert id(node) not in top, f"{module_name(p)} imports {dep} at module level"
