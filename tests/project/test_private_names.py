"""A private name (``_name``) is its module's own: no other module of the package imports it
or reaches it through the module, so a module can change its private parts freely."""

from __future__ import annotations

import ast
from pathlib import Path

import deepseek_review

PACKAGE = Path(deepseek_review.__file__).parent


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    where = PACKAGE.parent.joinpath(*name.split("."))
    return where.is_dir() or where.with_suffix(".py").is_file()


def private_uses_of(text: str, path: Path) -> list[str]:
    """Where ``text``, the module at ``path``, uses a private name of another module of the
    package."""
    own = _module_name(path)
    tree = ast.parse(text)
    modules: set[str] = set()  # local names bound to another module of the package
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("deepseek_review"):
            assert node.module is not None
            for alias in node.names:
                if _is_module(f"{node.module}.{alias.name}"):
                    modules.add(alias.asname or alias.name)
                elif _private(alias.name) and node.module != own:
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("deepseek_review") and alias.asname:
                    modules.add(alias.asname)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_uses_a_private_name_of_another() -> None:
    found = {
        str(p.relative_to(PACKAGE.parent)): uses
        for p in sorted(PACKAGE.rglob("*.py"))
        if (uses := private_uses_of(p.read_text(encoding="utf-8"), p))
    }
    assert found == {}


def test_the_rule_sees_an_imported_private_name() -> None:
    text = "from deepseek_review.reviewing.job import _Run\n"
    assert private_uses_of(text, PACKAGE / "reviewing" / "refine.py") == [
        "line 1: from deepseek_review.reviewing.job import _Run"
    ]


def test_the_rule_sees_a_private_name_reached_through_its_module() -> None:
    text = "from deepseek_review.reviewing import job\njob._Run\n"
    assert private_uses_of(text, PACKAGE / "reviewing" / "refine.py") == ["line 2: job._Run"]


def test_a_module_may_use_its_own_private_names() -> None:
    text = "from deepseek_review.reviewing.job import _Run\n"
    assert private_uses_of(text, PACKAGE / "reviewing" / "job.py") == []
