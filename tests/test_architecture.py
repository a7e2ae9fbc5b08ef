"""ARCHITECTURE.md's layer list holds: every intra-package import goes to a package on a line above."""

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "executorch_neutron"


def _layers() -> dict[str, int]:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    block = re.search(r"```layers\n(.*?)```", text, re.S).group(1)
    return {name: rank for rank, line in enumerate(block.splitlines()) for name in line.split()}


def _key(parts: list[str], layers: dict[str, int]) -> str:
    """The layer name of a module path inside the package: `neutron.npu` where the layer list splits a back-end
    folder into its parts, else the top-level package or module."""
    if len(parts) > 1 and f"{parts[0]}.{parts[1]}" in layers:
        return f"{parts[0]}.{parts[1]}"
    return parts[0]


def _imports():
    """(importing layer, imported layer, file) for every `from executorch_neutron...` / relative import."""
    layers = _layers()
    for f in PKG.rglob("*.py"):
        rel = f.relative_to(PKG).parts
        pkg = _key([*rel[:-1], rel[-1][:-3]], layers)
        for node in ast.walk(ast.parse(f.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            mod = node.module or ""
            if node.level == 0:
                if not mod.startswith("executorch_neutron."):
                    continue
                parts = mod.split(".")[1:]
            else:
                parts = list(rel[:-1])[: max(0, len(rel) - node.level)] + (mod.split(".") if mod else [])
            for name in (a.name for a in node.names):
                full = [*parts, name]
                t = _key(full, layers)
                if t != pkg and ((PKG / full[0]).is_dir() or (PKG / f"{full[0]}.py").is_file()):
                    yield pkg, t, f.relative_to(ROOT)


def test_every_package_has_a_layer():
    layers = _layers()
    present = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    present |= {p.stem for p in PKG.glob("*.py")}
    assert not present - set(layers), f"add these to ARCHITECTURE.md's layers: {sorted(present - set(layers))}"


def test_imports_go_down():
    layers = _layers()
    wrong = sorted({f"{src} -> {dst} ({path})" for src, dst, path in _imports()
                    if src in layers and dst in layers and layers[dst] >= layers[src]})
    assert not wrong, "imports that go up or sideways:\n" + "\n".join(wrong)


def _module_table_paths() -> set[str]:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text[text.index("## Modules"):]
    section = section[:section.index("\n## ", 1)]
    return {p.rstrip("/") for row in section.splitlines() if row.startswith("| `")
            for p in re.findall(r"`([^`]+)`", row.split("|")[1])}


def test_module_table_matches_the_tree():
    listed = _module_table_paths() - {"examples"}
    present = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    present |= {p.name for p in PKG.glob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    assert not listed - present, f"ARCHITECTURE.md's module table names what is not in the tree: {listed - present}"
    assert not present - listed, f"ARCHITECTURE.md's module table lacks: {sorted(present - listed)}"


#: the neutral front end: what every back end shares (ARCHITECTURE.md "One neutral front end")
FRONT_END = {"target", "compile_spec", "core", "tflite", "ops", "passes", "convert", "quantizer", "partition"}
BACK_ENDS = {"neutron", "ethos_u"}


def test_the_front_end_imports_no_back_end():
    """Whatever the layer list says: no module of the front end imports a back end's folder."""
    wrong = sorted({f"{src} -> {dst} ({path})" for src, dst, path in _imports()
                    if src.split(".")[0] in FRONT_END and dst.split(".")[0] in BACK_ENDS})
    assert not wrong, "the front end imports a back end:\n" + "\n".join(wrong)
    layers = _layers()
    low = [name for name in layers if name.split(".")[0] in BACK_ENDS
           and layers[name] <= max(layers[p] for p in FRONT_END)]
    assert not low, f"the layer list puts back-end parts at or below the front end: {low}"


def test_at_most_ten_top_level_modules():
    modules = sorted(p.stem for p in PKG.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(modules) <= 10, f"{len(modules)} top-level modules (group them into packages): {modules}"
