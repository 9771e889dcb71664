"""The names the records carry for a review's own requests (its findings extraction's and
self-check's template and topic suffix) are written once in the package: the modules that
write them and the ones that recognise them read the same constant."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import deepseek_review

PACKAGE = Path(deepseek_review.__file__).parent


@functools.cache
def _literals() -> list[tuple[str, str]]:
    """Every string literal of the package (docstrings aside), with where it is."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        found += [
            (node.value, f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ]
    return found


def _written(value: str) -> list[str]:
    """Where the package writes ``value`` as a string literal."""
    return [where for text, where in _literals() if text == value]


@pytest.mark.parametrize(
    "name", ["findings-extraction", "findings-self-check", "-findings", "-self-check"]
)
def test_an_internal_record_name_is_written_once(name: str) -> None:
    assert len(_written(name)) == 1, _written(name)
