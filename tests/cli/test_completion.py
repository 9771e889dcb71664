"""The shell's completion completes values, not only flags: the bundled templates, the export
formats, the chat APIs, and DeepSeek's model ids for ``--model``, through the protocol bash
and zsh use (the console script asked by the completion script typer installs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from deepseek_review.finding.export import FORMATS
from deepseek_review.options.rows import TEMPLATES

SCRIPT = Path(sys.executable).parent / "deepseek-review"


def bash_completion(line: str) -> list[str]:
    """What bash's completion offers for ``line`` (the word being typed is its last)."""
    words = line.split(" ")
    env = {
        **os.environ,
        "_DEEPSEEK_REVIEW_COMPLETE": "complete_bash",
        "COMP_WORDS": line,
        "COMP_CWORD": str(len(words) - 1),
    }
    out = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_template_completes_to_the_bundled_templates():
    assert bash_completion("deepseek-review run --template ") == list(TEMPLATES)


def test_a_typed_prefix_narrows_the_choices():
    assert bash_completion("deepseek-review batch --template s") == ["spec-review", "synthesis"]


def test_findings_format_completes_to_every_export_format():
    assert bash_completion("deepseek-review findings --format ") == list(FORMATS)


def test_api_completes_to_the_chat_apis():
    assert bash_completion("deepseek-review run --api ") == ["openai", "ollama"]


def test_model_completes_to_deepseeks_model_ids_but_takes_any_name():
    assert bash_completion("deepseek-review run --model deepseek-v4") == [
        "deepseek-v4-flash",
        "deepseek-v4-pro",
    ]
    help_text = subprocess.run(
        [str(SCRIPT), "run", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    ).stdout
    model_line = next(line for line in help_text.splitlines() if "--model" in line)
    assert "[deepseek-v4-flash|" not in model_line  # a free value: no list of choices in the help


def test_zsh_gets_the_same_values():
    env = {
        **os.environ,
        "_DEEPSEEK_REVIEW_COMPLETE": "complete_zsh",
        "_TYPER_COMPLETE_ARGS": "deepseek-review findings --fail-on ",
    }
    out = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    for severity in ("critical", "major", "minor", "nit"):
        assert f'"{severity}"' in out.stdout
