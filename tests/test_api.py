"""The library API: review, verify and run_batch return dataclasses and raise ReviewErrors."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

import deepseek_review
from deepseek_review import ReviewError, ReviewOptions, review, run_batch, verify
from deepseek_review.errors import InputError


def test_review_takes_keywords_and_returns_a_result_dataclass(repo, simulator):
    result = review(context=["docs/spec.md"], prompt="Check.", endpoint=simulator.base_url)
    assert dataclasses.is_dataclass(result)
    assert not result.truncated
    assert (repo / result.segments[0].answer_path).read_text(encoding="utf-8") == result.text


def test_review_accepts_options_with_keyword_replacements(repo, make_simulator):
    sim = make_simulator(answer_words=40)
    options = ReviewOptions(context=("docs/spec.md",), prompt="Check.", endpoint=sim.base_url)
    result = review(options, max_tokens=15, topic="lib")
    assert len(result.segments) > 1
    assert result.segments[0].answer_path.startswith("reviews/lib_deepseek_")


def test_review_raises_a_review_error_not_system_exit(repo):
    with pytest.raises(InputError, match=r"docs/missing\.md"):
        review(context=["docs/missing.md"], prompt="Check.")


def test_review_reads_the_key_from_the_given_env_not_os_environ(repo, make_simulator):
    sim = make_simulator(api_key="sk-lib-key")
    result = review(
        context=["docs/spec.md"],
        prompt="Check.",
        endpoint=sim.base_url,
        env={"OLLAMA_API_KEY": "sk-lib-key"},
        api_key_env="OLLAMA_API_KEY",
    )
    assert result.segments
    assert sim.chat_requests()[0].headers["authorization"] == "Bearer sk-lib-key"


def test_verify_returns_a_report_of_every_receipt(repo, simulator):
    review(context=["docs/spec.md"], prompt="Check.", endpoint=simulator.base_url)
    report = verify(["reviews"], root=repo)
    assert report.ok
    assert [c.name for c in report.receipts[0].checks] == [
        "schema",
        "answer",
        "chain",
        "context",
        "prompt",
    ]


def test_verify_defaults_to_the_output_folder(repo, simulator):
    review(context=["docs/spec.md"], prompt="Check.", endpoint=simulator.base_url)
    assert len(verify().receipts) == 1


def test_run_batch_runs_a_manifest_and_reports_each_entry(repo, simulator):
    (repo / "m.toml").write_text(
        '[[review]]\ntopic = "a"\nprompt = "x"\ncontext = "docs/spec.md"\n'
        '[[review]]\ntopic = "b"\nprompt = "y"\ncontext = "src"\n',
        encoding="utf-8",
    )
    report = run_batch(repo / "m.toml", overrides={"endpoint": simulator.base_url}, jobs=2)
    assert dataclasses.is_dataclass(report)
    assert sorted((e.topic, e.status) for e in report.entries) == [("a", "ok"), ("b", "ok")]


def test_every_exported_name_resolves():
    for name in deepseek_review.__all__:
        assert getattr(deepseek_review, name) is not None
    assert issubclass(deepseek_review.ReviewError, Exception)
    assert ReviewError is deepseek_review.errors.ReviewError


def test_importing_the_package_does_not_import_the_http_stack():
    code = "import sys, deepseek_review; print('httpx' in sys.modules, 'typer' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_package_ships_a_py_typed_marker():
    from importlib.resources import files

    assert files("deepseek_review").joinpath("py.typed").is_file()
