"""The README's promises that can drift from the code are checked against it."""

from __future__ import annotations

import re
from pathlib import Path

from deepseek_review.errors import EXIT_CODES

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def _exit_table() -> dict[int, str]:
    section = README.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(code): text for code, text in re.findall(r"^\| (\d+) \| (.+) \|$", section, re.M)}


def test_readme_exit_code_table_lists_every_failure_kind_once():
    assert sorted(_exit_table()) == sorted({0} | {code for code, _ in EXIT_CODES})


def test_readme_shows_the_two_setup_commands():
    assert "make demo" in README
    assert "make test" in README


def test_readme_copies_of_help_equal_the_real_output():
    import scripts.readme_help as readme_help

    blocks = list(readme_help.BLOCK.finditer(README))
    assert len(blocks) >= 8
    for m in blocks:
        assert m.group("body") == readme_help.help_text(m.group("args")), m.group("args")


def test_every_command_help_ends_with_an_example():
    import scripts.readme_help as readme_help

    for command in ("run", "continue", "show", "verify", "batch", "config", "stats"):
        assert "\n  Example: deepseek-review " + command in readme_help.help_text(command)


def test_readme_lists_exactly_the_keys_a_manifest_entry_may_hold():
    from deepseek_review.options.table import ENTRY_KEYS

    paragraph = re.split(r"What\s+belongs", README.split("An entry's keys:", 1)[1], maxsplit=1)[0]
    listed = set(re.findall(r"`([a-z_]+)`", paragraph))
    assert listed == set(ENTRY_KEYS)
