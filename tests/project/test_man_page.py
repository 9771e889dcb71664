"""The man page, docs/reference/deepseek-review.1: generated from every command's real
``--help`` (the CLI reference's source), valid troff, and a section for every command."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import scripts.man_page as man_page
from scripts.cli_reference import commands, help_text

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "deepseek-review.1"


def test_the_man_page_is_every_commands_real_help():
    assert PAGE.read_text(encoding="utf-8") == man_page.render(), "run python scripts/man_page.py"


def test_the_man_page_has_a_section_for_every_command_and_every_exit_code():
    text = PAGE.read_text(encoding="utf-8")
    sections = re.findall(r"^\.SS deepseek\\-review (\S+)$", text, re.M)
    assert sections == commands(help_text(""))
    assert re.findall(r"^\.B (\d+)$", text, re.M)[:3] == ["0", "1", "2"]


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_groff_reads_it_without_a_warning():
    out = subprocess.run(
        ["groff", "-man", "-Tutf8", "-ww", "-z", str(PAGE)], capture_output=True, text=True
    )
    assert (out.returncode, out.stderr) == (0, "")


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_it_shows_options_with_ascii_hyphens_as_typed():
    out = subprocess.run(
        ["groff", "-man", "-Tutf8", "-P-c", str(PAGE)],
        capture_output=True,
        text=True,
        env={"MANWIDTH": "120", "PATH": "/usr/bin:/bin"},
    )
    assert "--fail-on" in out.stdout and "--template" in out.stdout
