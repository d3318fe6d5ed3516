"""orc.documents sits below the orchestrator and above storage: nothing it imports from outside imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

import orc

ROOT = Path(orc.__file__).parent
DOCUMENTS = "orc.documents"


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = ["orc", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every orc module ``path`` imports, lazily or not, with the packages whose ``__init__`` that runs."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    imported = {name for name in names if name in modules}
    return imported | {".".join(name.split(".")[:n]) for name in imported for n in range(2, name.count(".") + 1)}


def _inside(module: str) -> bool:
    return module == DOCUMENTS or module.startswith(DOCUMENTS + ".")


def test_no_module_the_documents_package_imports_imports_the_package_back() -> None:
    modules = _modules()
    graph = {name: _imports(path, modules) for name, path in modules.items()}
    start = {target for name in graph if _inside(name) for target in graph[name] if not _inside(target)}
    seen, todo, back = set(start), list(start), []
    while todo:
        module = todo.pop()
        for target in graph.get(module, ()):
            if _inside(target):
                back.append(f"{module} -> {target}")
            elif target not in seen:
                seen.add(target)
                todo.append(target)

    assert back == []
