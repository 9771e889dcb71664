"""The README and the docs site: what can drift from the code is checked against it, and every
page stays reachable. ``make docs`` (mkdocs --strict) checks the links between pages."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from deepseek_review.errors import EXIT_CODES
from tests.support.git import commit, git

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav names, in order (paths under docs/)."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.md)$", nav, re.M)


def readme_links() -> list[str]:
    """The README's relative links, without their anchors."""
    links = re.findall(r"\]\(([^)]+)\)", README)
    return [link.split("#", 1)[0] for link in links if "://" not in link]


# ------------------------------------------------------------------------------- the README


def test_readme_shows_the_two_setup_commands():
    assert "make demo" in README
    assert "make test" in README


def test_readme_stays_a_front_page_under_300_lines():
    assert len(README.splitlines()) < 300


def try_it() -> list[str]:
    """The commands of the README's try-it block, comments dropped."""
    block = README.split("## Try it without Ollama", 1)[1].split("```\n", 2)[1]
    return [line.split("#", 1)[0].strip() for line in block.splitlines()]


def test_readme_tries_the_tool_in_5_lines_through_the_simulator_on_its_default_port():
    from deepseek_review.testing.simulator.command import DEFAULT_PORT

    lines = try_it()
    assert len(lines) <= 5
    assert lines[:2] == ["pip install .", "deepseek-review simulator &"]
    assert all(f"http://127.0.0.1:{DEFAULT_PORT}" in line for line in lines if " run " in line)


def test_readmes_try_it_reviews_and_verifies_as_written(repo, cli, simulator):
    (repo / "README.md").write_text("# A project\n\nIt does one thing.\n", encoding="utf-8")
    commands = [line for line in try_it() if line.startswith("deepseek-review ")][1:]
    assert [c.split()[1] for c in commands] == ["run", "verify"]
    for command in commands:
        args = shlex.split(command.replace("http://127.0.0.1:11435", simulator.base_url))
        r = cli(*args[1:])
        assert r.code == 0, (command, r.err)
    assert "1 OK" in r.err


def test_every_relative_link_of_the_readme_leads_to_a_file():
    broken = [link for link in readme_links() if not (ROOT / link).exists()]
    assert readme_links() and broken == []


def test_the_readme_links_every_page_of_the_docs():
    linked = {link.removeprefix("docs/") for link in readme_links() if link.startswith("docs/")}
    assert set(nav_pages()) - {"index.md"} <= linked


def test_the_readme_shows_an_example_of_every_command():
    from scripts.cli_reference import commands, help_text

    for command in commands(help_text("")):
        assert f"deepseek-review {command} " in README, command


def shop(root: Path) -> None:
    """The README's split example: a small shop, one file of it larger than a part."""

    def module(name: str, steps: int) -> str:
        step = (
            "def {name}_step_{i}(order, items):\n"
            '    """Apply step {i} to the order."""\n'
            "    total = sum(item.price * item.count for item in items)\n"
            "    if total > {limit}:\n"
            "        order.discount = total * 0.0{rate}\n"
            "    return order\n\n\n"
        )
        body = "".join(
            step.format(name=name, i=i, limit=100 + i, rate=i % 9 + 1) for i in range(steps)
        )
        return f'"""{name}: part of the shop example."""\n\n' + body

    sizes = {"src/cart/cart.py": 30, "src/cart/totals.py": 25, "src/orders/orders.py": 40}
    sizes |= {"src/orders/pricing.py": 120, "tests/test_cart.py": 15, "tests/test_orders.py": 20}
    files: dict[str, str | bytes | None] = {
        rel: module(rel.rpartition("/")[2][:-3], n) for rel, n in sizes.items()
    }
    sections = "".join(
        f"## Section {i}\n\nThe shop keeps carts, orders and stock apart; section {i} explains"
        " why.\n\n"
        for i in range(40)
    )
    files |= {"docs/design.md": "# Design\n\n" + sections, "docs/logo.png": bytes(range(256)) * 4}
    files["README.md"] = "# shop\n\nA small example shop.\n"
    git(root, "init", "-q")
    commit(root, "the shop", files)


def test_the_readmes_split_dry_run_is_what_the_command_prints(tmp_path, monkeypatch, cli):
    block = README.split("```console\n$ ", 1)[1].split("```", 1)[0]
    command, *shown = block.splitlines()
    root = tmp_path / "shop"
    root.mkdir()
    shop(root)
    monkeypatch.chdir(root)
    r = cli(*shlex.split(command)[1:])
    assert r.code == 0, r.err
    printed = r.out.splitlines()
    excerpt = [line for line in shown if line != "..."]
    assert "--split" in command and "--dry-run" in command
    assert [line for line in printed if line in excerpt] == excerpt


# ------------------------------------------------------------------------------- the site


def test_every_page_of_the_docs_is_in_the_nav_and_every_nav_entry_is_a_page():
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav_pages()) == pages
    assert len(nav_pages()) == len(set(nav_pages()))


@pytest.mark.parametrize("setting", ["theme:\n  name: material\n  font: false\n", "strict: true"])
def test_the_site_builds_offline_and_strictly(setting):
    """Google fonts would be fetched by every reader's browser and by nothing at build time;
    font: false keeps the site self-contained; strict makes a broken link an error."""
    assert setting in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


# ------------------------------------------------------------------------- generated reference


def test_the_cli_reference_is_every_commands_real_help():
    import scripts.cli_reference as cli_reference

    assert page("reference/cli.md") == cli_reference.render(), "run python scripts/cli_reference.py"


def test_the_cli_reference_has_a_section_for_every_command():
    from scripts.cli_reference import commands, help_text

    listed = commands(help_text(""))
    assert {"run", "continue", "show", "verify", "batch", "findings", "sign", "attest"} <= set(
        listed
    )
    sections = re.findall(r"^## `deepseek-review ?([a-z]*)`$", page("reference/cli.md"), re.M)
    assert sections == ["", *listed]


def test_every_command_help_ends_with_an_example():
    from scripts.cli_reference import help_text

    for command in ("run", "continue", "show", "verify", "batch", "config", "stats"):
        assert "\n  Example: deepseek-review " + command in help_text(command)


def test_the_options_page_holds_both_generated_tables():
    import scripts.option_docs as option_docs

    (path,) = option_docs.DOCS
    scopes = [m.group("scope") for m in option_docs.BLOCK.finditer(path.read_text("utf-8"))]
    assert sorted(scopes) == ["config_file", "entry"]
    assert path == DOCS / "reference" / "options.md"


def _exit_table() -> dict[int, str]:
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \| .+ \|$", page("reference/exit-codes.md"), re.M)
    assert len(rows) == len({int(code) for code, _ in rows}), "a code listed twice"
    return {int(code): kind for code, kind in rows}


def test_the_exit_code_table_is_the_mapping_of_errors_py():
    assert _exit_table() == {code: cls.__name__ for code, cls in EXIT_CODES}


def test_the_schemas_page_lists_every_published_schema():
    text = page("reference/schemas.md")
    schemas = sorted(p.name for p in (ROOT / "schemas").glob("*.json"))
    assert schemas and [name for name in schemas if f"`schemas/{name}`" not in text] == []


def test_the_batch_guide_lists_exactly_the_keys_a_manifest_entry_may_hold():
    from deepseek_review.options.table import ENTRY_KEYS

    paragraph = page("guide/batch.md").split("An entry's keys:", 1)[1]
    paragraph = re.split(r"What\s+belongs", paragraph, maxsplit=1)[0]
    listed = set(re.findall(r"`([a-z_]+)`", paragraph))
    assert listed == set(ENTRY_KEYS)


def test_the_module_map_of_the_developer_guide_lists_every_module_where_it_is():
    import scripts.module_map as module_map

    text = module_map.DOC.read_text("utf-8")
    assert module_map.updated(text) == text, "run python scripts/module_map.py"


def test_the_module_map_follows_the_layers_that_make_lint_enforces():
    import scripts.module_map as module_map

    listed = module_map.layers()
    assert listed[:2] == ["cli", "api"]
    top_level = {p.stem for p in module_map.PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    folders = {p.name for p in module_map.PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert set(listed) == folders | top_level
