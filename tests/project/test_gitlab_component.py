"""``templates/deepseek-review.yml``, the GitLab CI/CD component: its ``spec: inputs`` match
the ``$[[ inputs.x ]]`` it uses, and its script, with the inputs substituted and GitLab's
predefined variables set as in a merge request pipeline, reviews a merge request of a real git
repository against the simulator and leaves the Code Quality report and SARIF it declares.

GitLab itself is not here: the ``before_script`` (pip installing the released package) is not
run, the ``deepseek-review`` of this venv stands in for it, and interpolation is done by the
substitution below (GitLab's own is textual too).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.findings import assert_valid_codequality, assert_valid_sarif
from tests.support.git import commit, git
from tests.support.reviews import write_repo
from tests.support.split import words

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "templates" / "deepseek-review.yml").read_text(encoding="utf-8")
SPEC, JOBS = yaml.safe_load_all(TEXT)
JOB = JOBS["deepseek-review"]
USE = re.compile(r"\$\[\[\s*inputs\.([A-Za-z0-9_-]+)\s*\]\]")


def interpolated(inputs: dict[str, Any]) -> dict[str, Any]:
    """The job with every ``$[[ inputs.x ]]`` replaced, as GitLab does before parsing it."""
    declared = SPEC["spec"]["inputs"]
    values = {k: inputs.get(k, v.get("default", "")) for k, v in declared.items()}
    body = TEXT.split("\n---\n", 1)[1]
    shown = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in values.items()}
    text = USE.sub(lambda m: shown[m.group(1)], body)
    job: dict[str, Any] = yaml.safe_load(text)["deepseek-review"]
    return job


def test_it_is_a_component_a_spec_then_the_job():
    assert TEXT.count("\n---\n") == 1
    assert set(SPEC) == {"spec"}
    assert set(JOBS) == {"deepseek-review"}


def test_every_input_used_is_declared_and_every_declared_one_used():
    assert set(USE.findall(TEXT.split("\n---\n", 1)[1])) == set(SPEC["spec"]["inputs"])


def test_no_endpoint_or_key_input_they_are_ci_cd_variables():
    names = set(SPEC["spec"]["inputs"])
    assert not {n for n in names if "endpoint" in n or "key" in n}
    assert "DEEPSEEK_REVIEW_ENDPOINT" in "\n".join(JOB["script"])


def test_it_runs_on_merge_requests_and_keeps_its_reports():
    assert JOB["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert JOB["artifacts"]["reports"] == {"codequality": "gl-code-quality-report.json"}
    assert JOB["artifacts"]["when"] == "always"
    assert "deepseek-review.sarif" in JOB["artifacts"]["paths"]


def test_the_package_input_is_required_no_default_name_anyone_could_publish():
    """Whatever pip installs runs with the project's CI/CD variables: a default name not
    published on PyPI could be claimed by anyone, so the user names what they trust."""
    package = SPEC["spec"]["inputs"]["package"]
    assert "default" not in package
    assert "deepseek-review @ git+https://" in package["description"]
    assert JOB["variables"]["DSR_PACKAGE"] == "$[[ inputs.package ]]"
    assert any('pip install --quiet "$DSR_PACKAGE"' in c for c in JOB["before_script"])


def test_an_empty_package_input_stops_the_job_before_anything_is_installed(tmp_path):
    """GitLab accepts an empty value for a required input: the job names the input."""
    stub = tmp_path / "bin"
    stub.mkdir()
    for name in ("python3", "pip"):  # would install: must not be reached
        (stub / name).write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\nexit 1\n", "utf-8")
        (stub / name).chmod(0o755)
    job = interpolated({"package": ""})
    out = subprocess.run(
        [
            "bash",
            "--noprofile",
            "--norc",
            "-c",
            "set -eo pipefail\n" + "\n".join(job["before_script"]),
        ],
        cwd=tmp_path,
        env={"PATH": f"{stub}{os.pathsep}{os.environ['PATH']}", "DSR_PACKAGE": ""},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 2
    [line] = out.stdout.splitlines()
    assert "set the component input package" in line
    assert not (tmp_path / "ran").exists()


def test_every_python_the_job_starts_runs_isolated():
    """The job runs in the merge request's checkout: ``python3 -m venv`` or ``-c`` without
    ``-I`` would import a ``venv.py`` (or ``json.py``, ``pip/``) it put at its root."""
    lines = [*JOB["before_script"], *JOB["script"]]
    started = [m for line in lines for m in re.findall(r"\bpython3?\s+(-\S+)", line)]
    assert started and set(started) == {"-I"}


def test_no_input_is_interpolated_into_a_shell_line():
    """GitLab substitutes ``$[[ ]]`` as text: in a script line an input's quote would end
    the string and the rest run as shell code. Inputs reach the shell as variables."""
    lines = [*JOB["before_script"], *JOB["script"]]
    assert [line for line in lines if "$[[" in line] == []


# --------------------------------------------------------------------------- the script


def merge_request(
    root: Path, base_files: dict[str, str | bytes | None] | None = None
) -> tuple[Path, str, str]:
    """A repository checked out at a merge request's head; its base (adding ``base_files``)
    and head commits."""
    work = write_repo(root / "work")
    base = commit(work, "base", base_files or {})
    head = commit(work, "mr", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    return work, base, head


def run_job(
    work: Path, base: str, head: str, inputs: dict[str, Any], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The job's script lines, in one bash as GitLab's runner runs them, with its variables."""
    job = interpolated(inputs)
    script = "set -eo pipefail\n" + "\n".join(job["script"]) + "\n"
    variables = {k: str(v) for k, v in job["variables"].items()}
    predefined = {
        "CI": "true",
        "GITLAB_CI": "true",
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_IID": "7",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
        "CI_COMMIT_SHA": head,
        "CI_PROJECT_DIR": str(work),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", script],
        cwd=work,
        env={**os.environ, **predefined, **variables, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_job_writes_the_code_quality_report_and_sarif_of_the_merge_request(tmp_path, simulator):
    work, base, head = merge_request(tmp_path)
    env = {"DEEPSEEK_REVIEW_ENDPOINT": simulator.base_url}
    out = run_job(work, base, head, {"context": "docs/spec.md"}, env)
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads((work / "gl-code-quality-report.json").read_text(encoding="utf-8"))
    assert_valid_codequality(report)
    assert [i["location"]["path"] for i in report] == ["docs/spec.md"]
    assert_valid_sarif(json.loads((work / "deepseek-review.sarif").read_text(encoding="utf-8")))
    (answer,) = (work / "ci-review").glob("mr-7_*[0-9]Z.md")
    record = answer.with_suffix(".request.json").read_text(encoding="utf-8")
    assert base in record and head in record
    assert "## deepseek-review findings" in out.stdout
    assert git(work, "rev-parse", "HEAD").strip() == head


@pytest.mark.slow
def test_job_fails_on_a_finding_at_the_threshold(tmp_path, simulator):
    work, base, head = merge_request(tmp_path)
    env = {"DEEPSEEK_REVIEW_ENDPOINT": simulator.base_url}
    out = run_job(work, base, head, {"context": "docs/spec.md", "fail-on": "nit"}, env)
    assert out.returncode == 13, out.stdout + out.stderr
    assert (work / "gl-code-quality-report.json").is_file()  # written before the gate


@pytest.mark.slow
def test_job_without_an_endpoint_variable_says_which_variable_to_set(tmp_path):
    work, base, head = merge_request(tmp_path)
    out = run_job(work, base, head, {}, {})
    assert out.returncode == 2
    assert "set the CI/CD variable DEEPSEEK_REVIEW_ENDPOINT" in out.stdout
    assert not (work / "ci-review").exists()


@pytest.mark.slow
def test_job_with_split_reviews_in_parts_and_reports_the_synthesis(tmp_path, make_simulator):
    """A context larger than the window: ``run --split --json`` lists parts, not segments;
    the reports are the synthesis's findings."""
    big: dict[str, str | bytes | None] = {f"docs/part{i}.md": words(i, 6_000) for i in range(4)}
    work, base, head = merge_request(tmp_path, big)
    small = make_simulator(context_window=4096, context_overflow="refuse", answer_words=40)
    env = {"DEEPSEEK_REVIEW_ENDPOINT": small.base_url, "DEEPSEEK_REVIEW_CONTEXT_WINDOW": "4096",
           "DEEPSEEK_REVIEW_MAX_TOKENS": "512"}  # fmt: skip
    out = run_job(work, base, head, {"context": "docs/", "split": True}, env)
    assert out.returncode == 0, out.stdout + out.stderr
    (record,) = (work / "ci-review").glob("*.split.json")
    assert len(json.loads(record.read_text(encoding="utf-8"))["parts"]) >= 2
    assert_valid_codequality(json.loads((work / "gl-code-quality-report.json").read_text("utf-8")))
    assert "## deepseek-review findings" in out.stdout
