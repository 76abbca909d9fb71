"""Architecture figures of the onmt_xl package of the checkout it runs in: modules, largest functions and
classes, internal import edges and module cycles (grimp). Run from the repository root: python3
tools/ci/arch_stats.py"""
import ast, pathlib, sys
import grimp
root = pathlib.Path("onmt_xl")
mods = list(root.rglob("*.py"))
funcs, classes = [], []
for p in mods:
    t = ast.parse(p.read_text())
    for n in ast.walk(t):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            funcs.append((n.end_lineno - n.lineno + 1, f"{p}:{n.name}"))
        elif isinstance(n, ast.ClassDef):
            classes.append((n.end_lineno - n.lineno + 1, f"{p}:{n.name}"))
funcs.sort(reverse=True); classes.sort(reverse=True)
sys.path.insert(0, ".")
g = grimp.build_graph("onmt_xl", cache_dir=None)
edges = [(a, b) for a in g.modules for b in g.find_modules_directly_imported_by(a)]
# cycles: strongly connected components of the module graph with more than one module
import itertools
idx = {}; low = {}; stack = []; on = set(); sccs = []; counter = itertools.count()
sys.setrecursionlimit(10000)
def strong(v):
    idx[v] = low[v] = next(counter); stack.append(v); on.add(v)
    for w in g.find_modules_directly_imported_by(v):
        if w not in idx:
            strong(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: sccs.append(sorted(comp))
for v in sorted(g.modules):
    if v not in idx: strong(v)
print(f"modules: {len(mods)} files, {sum(len(p.read_text().splitlines()) for p in mods)} lines")
print("largest functions:", funcs[:3])
print("largest classes:", classes[:3])
print(f"functions over 60 lines: {sum(l > 60 for l, _ in funcs)}; classes over 300: {sum(l > 300 for l, _ in classes)}")
print(f"internal import edges: {len(edges)}")
print(f"module cycles (strongly connected groups): {len(sccs)}", sccs)
