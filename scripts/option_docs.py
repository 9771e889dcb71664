"""Keep the documentation's tables of options equal to the option table.

docs/reference/options.md holds blocks between `<!-- options: SCOPE -->` and
`<!-- /options -->` markers (SCOPE: `entry`, the keys of a manifest entry; `config_file`, the
settings of a config file and the environment); `python scripts/option_docs.py` rewrites each
from the option table (deepseek_review/options/rows.py), and `--check` exits 1 if any differs
(tests/options/test_options.py runs the same comparison).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from deepseek_review.options.table import DEFAULTS, ENV, OPTIONS, in_scope

ROOT = Path(__file__).resolve().parent.parent
DOCS = (ROOT / "docs" / "reference" / "options.md",)
BLOCK = re.compile(
    r"(<!-- options: (?P<scope>[a-z_]+) -->\n)(?P<body>.*?)(<!-- /options -->)", re.S
)
_TYPES = {
    "str": "string",
    "path": "path (string)",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "json": "table / object",
    "paths": "string or list of strings",
}


def _cell(text: str) -> str:
    """Text for a markdown table cell (``<topic>`` is not an HTML tag)."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def table(scope: str) -> str:
    """The markdown table of the options of ``scope``."""
    if scope == "entry":
        rows = ["| key | type | in `[defaults]` | default and meaning |", "|---|---|---|---|"]
        for o in in_scope(scope):
            where = "yes" if DEFAULTS in o.scopes else "no"
            rows.append(f"| `{o.key}` | {_TYPES[o.kind]} | {where} | {_cell(o.help_text())} |")
    elif scope == "config_file":
        rows = ["| key | variable | type | default and meaning |", "|---|---|---|---|"]
        for o in in_scope(scope):
            rows.append(
                f"| `{o.key}` | `{o.env_name}` | {_TYPES[o.kind]} | {_cell(o.help_text())} |"
            )
        for o in OPTIONS.values():
            if ENV in o.scopes and o.key not in {x.key for x in in_scope(scope)}:
                rows.append(
                    f"| — | `{o.env_name}` | {_TYPES[o.kind]} | {_cell(o.help_text())} "
                    f"Not in a config file: {_cell(o.refusal or '')}. |"
                )
    else:
        raise ValueError(f"no table for scope {scope!r}")
    return "\n".join(rows) + "\n"


def render(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + table(m.group("scope")) + m.group(4), text)


def main(argv: list[str]) -> int:
    stale = [p for p in DOCS if render(p.read_text(encoding="utf-8")) != p.read_text("utf-8")]
    if "--check" in argv:
        for path in stale:
            print(f"{path.name}: an options table is stale; run python scripts/option_docs.py")
        return 1 if stale else 0
    for path in stale:
        path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
