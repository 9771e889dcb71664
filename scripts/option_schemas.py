"""Write the JSON Schemas derived from the option table into ``schemas/``.

`python scripts/option_schemas.py` writes schemas/deepseek-review-manifest.schema.json (a batch
manifest: editors such as taplo / Even Better TOML validate one with it) and
schemas/deepseek-review-config.schema.json (``.deepseek-review.toml``); ``--check`` exits 1 if
either differs from what the table gives (tests/options/test_options.py runs the same comparison).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepseek_review.options import schema as optschema

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
PUBLISHED: dict[str, Callable[[], dict[str, Any]]] = {
    optschema.MANIFEST_SCHEMA_NAME: optschema.manifest_schema,
    optschema.CONFIG_SCHEMA_NAME: optschema.config_schema,
}


def stale() -> list[str]:
    """The published schemas that differ from the table's."""
    return [
        name
        for name, make in PUBLISHED.items()
        if not (SCHEMAS / name).is_file()
        or (SCHEMAS / name).read_text(encoding="utf-8") != optschema.rendered(make())
    ]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        names = stale()
        for name in names:
            print(f"schemas/{name} is stale; run python scripts/option_schemas.py", file=sys.stderr)
        return 1 if names else 0
    for name, make in PUBLISHED.items():
        (SCHEMAS / name).write_text(optschema.rendered(make()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
