"""Keep the module map in docs/contributing/developing.md equal to the package.

The block between ``<!-- modules -->`` and ``<!-- /modules -->`` lists every subpackage (its
docstring) and every module in it (the first sentence of its docstring), in the order of the
layers. ``python scripts/module_map.py`` rewrites it; ``--check`` exits 1 if it differs
(tests/project/test_readme.py runs the same comparison), so a module added, moved or renamed shows.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "deepseek_review"
DOC = ROOT / "docs" / "contributing" / "developing.md"
BLOCK = re.compile(r"(<!-- modules -->\n)(?P<body>.*?)(<!-- /modules -->)", re.S)


def _summary(path: Path) -> str:
    """The first sentence of a module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(doc.split("\n\n", 1)[0].split())
    match = re.match(r"(.+?[.:;])(\s|$)", text)
    return (match.group(1) if match else text).rstrip(":;.") + "."


def layers() -> list[str]:
    """The subpackages and top-level modules, top layer first, as pyproject.toml lists them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    listed = next(c["layers"] for c in contracts if c["type"] == "layers")
    return [name.strip().split(".", 1)[1] for line in listed for name in line.split("|")]


def module_map() -> str:
    lines: list[str] = []
    for name in layers():
        folder = PACKAGE / name
        if not folder.is_dir():
            lines.append(f"- **`{name}.py`**: {_summary(PACKAGE / f'{name}.py')}")
            continue
        lines.append(f"- **`{name}/`**: {_summary(folder / '__init__.py')}")
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).as_posix()
            if rel == "__init__.py":
                continue
            lines.append(f"  - `{rel}`: {_summary(path)}")
    return "\n".join(lines) + "\n"


def updated(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + module_map() + m.group(3), text)


def main(argv: list[str]) -> int:
    text = DOC.read_text(encoding="utf-8")
    new = updated(text)
    if "--check" in argv:
        if new != text:
            print(f"{DOC.relative_to(ROOT)} is stale: run python scripts/module_map.py")
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
