"""The README and the documentation pages (issue 79) name only what exists: every repository path (``tools/x.py``,
``onmt_xl/...``, ``reports/...md``) and every ``onmt_xl.module.name`` they mention, every relative link; the README
stays short and its test command is the one CI runs; its YAML snippets agree with the complete configs they abridge.
Cheap: no build (CI builds the pages with ``mkdocs build --strict``, which checks the links between pages and their
anchors; the last test does the same here when MkDocs is installed)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
TEXTS = [README, *PAGES]

#: a path inside the repository, as the pages write it: one of our top-level folders, then path characters
PATH = re.compile(r"(?<![\w./$-])((?:onmt_xl|tools|reports|tests|docs|yaml_configs|\.ci)/[\w./-]*)")
#: the repository's top-level files, named without a folder
TOP_FILES = re.compile(
    r"(?<![\w./-])(pyproject\.toml|mkdocs\.yml|CHANGELOG\.md|README\.md|onmt_xl_hook\.(?:py|pth))(?![\w])")
#: a dotted name inside the package: onmt_xl.module(.module)*(.attribute)?
DOTTED = re.compile(r"(?<![\w./])(onmt_xl(?:\.\w+)+)")
#: a Markdown link
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: a placeholder in a path (the pages' examples), not a file of the repository
PLACEHOLDER = re.compile(r"SYSTEM|NAME|\bW\b|\$\{|\.\.\.|…|\*")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _mentions(pattern: re.Pattern):
    """``(page, line number, match)`` of ``pattern`` in the README and every page."""
    for page in TEXTS:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for match in pattern.finditer(line):
                yield _rel(page), number, match.group(1)


def _module_file(parts):
    """The checkout's file of module ``parts`` (``["onmt_xl", "reorder", "oracle"]``), or None."""
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _top_level_names(path: Path) -> set:
    """The names a module defines or imports at its top level (functions, classes, assignments, imports)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def dotted_name_exists(name: str) -> bool:
    """``onmt_xl.a.b`` is a module of the checkout, or ``onmt_xl.a.f`` a name that module defines (at top level)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = _module_file(parts[:cut])
        if module is not None:
            rest = parts[cut:]
            return not rest or rest[0] in _top_level_names(module)
    return False


def test_the_paths_named_exist():
    missing = [f"{page}:{number}: {path}" for page, number, path in _mentions(PATH)
               if not PLACEHOLDER.search(path) and not (ROOT / path.rstrip(".")).exists()]
    missing += [f"{page}:{number}: {path}" for page, number, path in _mentions(TOP_FILES) if not (ROOT / path).exists()]
    assert not missing, "the README or docs/ name files that do not exist:\n" + "\n".join(missing)


def test_the_modules_named_exist():
    missing = [f"{page}:{number}: {name}" for page, number, name in _mentions(DOTTED)
               if not dotted_name_exists(name.rstrip("."))]
    assert not missing, "the README or docs/ name modules or functions that do not exist:\n" + "\n".join(missing)


def test_the_checks_catch_a_stale_reference():
    """The two checks above fail on a moved file and on a renamed function."""
    assert PATH.findall("see `onmt_xl/no_such_dir/x.py` and tools/bench/bench_cpu.py") == [
        "onmt_xl/no_such_dir/x.py", "tools/bench/bench_cpu.py"]
    assert not (ROOT / "onmt_xl/no_such_dir/x.py").exists() and (ROOT / "tools/bench/bench_cpu.py").exists()
    assert dotted_name_exists("onmt_xl.core.reorder.oracle") and dotted_name_exists("onmt_xl.core.reorder.oracle.btg_oracle")
    assert not dotted_name_exists("onmt_xl.core.reorder.oracle.no_such_function")
    assert not dotted_name_exists("onmt_xl.no_such_module")


def test_relative_links_reach_a_file():
    """The README's links into docs/ (which GitHub follows) and the pages' links to each other reach a file."""
    broken = []
    for page, number, target in _mentions(LINK):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (ROOT / page).parent / target.split("#", 1)[0]
        if not path.exists():
            broken.append(f"{page}:{number}: {target}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_readme_is_short_and_links_every_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250, "the README is read in five minutes: at most 250 lines (the rest: docs/)"
    assert [p.name for p in PAGES if f"(docs/{p.name})" not in text and p.name != "index.md"] == []


def test_every_page_is_in_the_navigation():
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    assert sorted(file for entry in nav for file in entry.values()) == sorted(p.name for p in PAGES)


def test_ci_runs_the_readmes_test_command():
    """The README's test command is the one .ci/run runs after the install."""
    command = "python3 -m pytest -q tests"
    assert f"bash tools/install.sh && {command}\n" in README.read_text(encoding="utf-8")
    assert f"\n{command}\n" in (ROOT / ".ci/run").read_text(encoding="utf-8")


def _yaml_blocks(path: Path):
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)]


def _leaves(tree, prefix=()):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, (*prefix, key))
    else:
        yield prefix, tree


def _at(tree, keys):
    for key in keys:
        if not isinstance(tree, dict) or key not in tree:
            return KeyError
        tree = tree[key]
    return tree


def test_the_readmes_eole_yaml_abridges_the_complete_one():
    """Every line of the README's Eole YAML is in docs/eole.md's complete config (which tests/test_eole_docs.py
    validates with Eole's own config model), with the same value."""
    readme = [b for b in _yaml_blocks(README) if "transforms_configs" in b]
    complete = [b for b in _yaml_blocks(ROOT / "docs/eole.md") if "transforms_configs" in b and "training" in b]
    assert len(readme) == 1 and len(complete) == 1
    differ = [(keys, value, _at(complete[0], keys)) for keys, value in _leaves(readme[0])
              if _at(complete[0], keys) != value]
    assert not differ, differ


def test_the_readmes_opennmt_yaml_matches_the_combination_config():
    """The README's OpenNMT-py lines name the options, encoder and transform of yaml_configs/combination.yaml."""
    readme = [b for b in _yaml_blocks(README) if "encoder_type" in b]
    assert len(readme) == 1
    config = yaml.safe_load((ROOT / "yaml_configs/combination.yaml").read_text(encoding="utf-8"))
    assert set(readme[0]) <= set(config) and readme[0]["encoder_type"] == config["encoder_type"]
    assert [c["transforms"] for c in readme[0]["data"].values()] == [config["data"]["train"]["transforms"]]


def test_the_pages_build_strictly(tmp_path):
    """``mkdocs build --strict``, as CI runs it: a broken link or anchor, or a page outside the navigation, fails."""
    pytest.importorskip("mkdocs", reason="MkDocs is not installed (bash tools/install.sh docs)")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
