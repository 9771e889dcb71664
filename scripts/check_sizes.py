"""Keep modules and functions sized by concept.

A module over ``MAX_MODULE_LINES`` lines holds more than one concept; a function over
``MAX_FUNCTION_LINES`` lines (its decorators, signature and docstring included) does more than
one thing a reader can hold at once. ``python scripts/check_sizes.py`` walks the package, the
scripts and the benchmarks, prints ``file:line: ...`` for each one too long and exits 1 if any
is (``make lint`` runs it). Paths given on the command line are checked instead.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("deepseek_review", "scripts", "benchmarks")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


@dataclass(frozen=True)
class Oversize:
    """One module or function longer than its limit."""

    path: Path
    line: int
    what: str
    lines: int
    limit: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} is {self.lines} lines (limit {self.limit})"


def _function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    """The first line (its first decorator, else ``def``) and the length of a function."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    last = node.end_lineno if node.end_lineno is not None else node.lineno
    return first, last - first + 1


def _functions(
    tree: ast.AST, prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method in ``tree``, named by where it is nested (``Class.method``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from _functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def check_file(
    path: Path,
    max_module: int = MAX_MODULE_LINES,
    max_function: int = MAX_FUNCTION_LINES,
) -> list[Oversize]:
    """What in the Python file at ``path`` is over its limit, in order of line."""
    text = path.read_text(encoding="utf-8")
    found: list[Oversize] = []
    module_lines = len(text.splitlines())
    if module_lines > max_module:
        found.append(Oversize(path, 1, "module", module_lines, max_module))
    for name, node in _functions(ast.parse(text, filename=str(path))):
        first, length = _function_lines(node)
        if length > max_function:
            found.append(Oversize(path, first, f"function {name}", length, max_function))
    return sorted(found, key=lambda o: o.line)


def python_files(roots: Iterable[Path]) -> list[Path]:
    """The ``.py`` files at or under each of ``roots``, sorted."""
    files: set[Path] = set()
    for root in roots:
        if root.is_file():
            files.add(root)
        else:
            files.update(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    return sorted(files)


def check(roots: Iterable[Path]) -> list[Oversize]:
    """What is over its limit in every Python file at or under ``roots``."""
    return [o for path in python_files(roots) for o in check_file(path)]


def _shown(oversize: Oversize) -> Oversize:
    """``oversize`` with its path relative to the project, when it is inside it."""
    path = oversize.path.resolve()
    if path.is_relative_to(ROOT):
        return replace(oversize, path=path.relative_to(ROOT))
    return oversize


def main(argv: list[str]) -> int:
    """Check ``argv``'s paths (or the project's), print what is too long, 1 if anything is."""
    roots = [Path(a) for a in argv] or [ROOT / name for name in CHECKED]
    found = check(roots)
    for oversize in found:
        print(_shown(oversize))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
