"""The library API: review, verify and run_batch return dataclasses and raise ReviewErrors."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

import deepseek_review
from deepseek_review import ReviewError, ReviewOptions, ReviewResult, review, run_batch, verify
from deepseek_review.errors import InputError


def test_review_takes_keywords_and_returns_a_result_dataclass(repo, simulator):
    result = review(context=["docs/spec.md"], prompt="Check.", endpoint=simulator.base_url)
    assert isinstance(result, ReviewResult)
    assert dataclasses.is_dataclass(result)
    assert not result.truncated
    assert (repo / result.segments[0].answer_path).read_text(encoding="utf-8") == result.text


def test_review_accepts_options_with_keyword_replacements(repo, make_simulator):
    sim = make_simulator(answer_words=40)
    options = ReviewOptions(context=("docs/spec.md",), prompt="Check.", endpoint=sim.base_url)
    result = review(options, max_tokens=15, topic="lib")
    assert isinstance(result, ReviewResult)
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
    assert isinstance(result, ReviewResult)
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


def test_importing_the_package_imports_neither_the_http_stack_nor_logging():
    code = (
        "import sys, deepseek_review; "
        "print(*(m in sys.modules for m in ('httpx', 'typer', 'logging')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]


def test_the_package_ships_a_py_typed_marker():
    from importlib.resources import files

    assert files("deepseek_review").joinpath("py.typed").is_file()


# --------------------------------------------------------------------------- one front door


@pytest.fixture
def configured(repo, monkeypatch):
    """A repository configuration and an environment setting, as a user would have them."""
    (repo / ".deepseek-review.toml").write_text('output_dir = "custom"\nmax_tokens = 7777\n')
    monkeypatch.setenv("DEEPSEEK_REVIEW_MODEL", "m-from-env")
    return repo


def test_review_honours_the_config_file_and_environment_exactly_as_run(configured, simulator, cli):
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    result = review(context=["docs/spec.md"], prompt="Check.", endpoint=simulator.base_url)
    assert isinstance(result, ReviewResult)
    by_cli, by_library = simulator.chat_requests()
    assert by_library.body == by_cli.body
    assert b'"max_tokens":7777' in by_library.body
    assert b'"model":"m-from-env"' in by_library.body
    assert result.segments[0].answer_path.startswith("custom/")
    assert len(list((configured / "custom").glob("*.receipt.json"))) == 2


def test_review_takes_flat_continuation_keywords(repo, make_simulator):
    sim = make_simulator(answer_words=40)
    result = review(context="docs/spec.md", prompt="Check.", endpoint=sim.base_url,
                    max_tokens=15, max_continuations=0, server="vllm")  # fmt: skip
    assert isinstance(result, ReviewResult)
    assert result.truncated
    assert len(result.segments) == 1


def test_review_refuses_an_unknown_keyword_naming_it(repo):
    with pytest.raises(ReviewError, match="unknown option 'max_token'"):
        review(context="docs/spec.md", prompt="Check.", max_token=15)


def test_review_prints_nothing_even_when_it_warns(repo, make_simulator):
    """In a process of its own, as a program using the library runs (the CLI tests in this
    process install the command's log handler)."""
    sim = make_simulator(omit_usage=True)  # the tool warns that usage was not reported
    code = (
        "from deepseek_review import review\n"
        f"r = review(context='docs/spec.md', prompt='Check.', endpoint={sim.base_url!r})\n"
        "assert r.segments and not r.segments[0].usage_reported\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")
