"""Templates put what is stable first and the question last, so a server's prefix cache
serves the files to every question about them; earlier template versions stay loadable.

The messages checked are the ones the simulator received: what a server's cache sees.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator
from deepseek_review.util.resources import prompts_dir
from tests.support.cli import Cli, review

BUNDLED = ("default", "spec-review", "code-review", "diff-review", "synthesis")
#: The hash every review recorded for ``default`` before version 2 (``prompts/v1/default.md``).
DEFAULT_V1_SHA256 = "sha256:9ff99e8d185a9e3b3b7f975e5ed0b62d2ac52fe36091290b2631c79afd2513b4"


def sent_messages(simulator: Simulator, cli: Cli, *args: str, prompt: str) -> list[Any]:
    before = len(simulator.chat_requests())
    r = review(cli, simulator, *args, context=("docs", "src"), prompt=prompt)
    assert r.code == 0, r.err
    (request,) = simulator.chat_requests()[before:]
    messages: list[Any] = json.loads(request.body)["messages"]
    return messages


def shared_prefix(a: str, b: str) -> str:
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return a[:n]


@pytest.mark.parametrize("name", BUNDLED)
def test_two_questions_about_the_same_files_share_every_file_before_they_differ(
    name, repo, simulator, cli
):
    first = sent_messages(
        simulator, cli, "--template", name, "--topic", "mean", prompt="Is the mean right?"
    )
    second = sent_messages(
        simulator, cli, "--template", name, "--topic", "names", prompt="Are the names clear?"
    )
    assert first[0] == second[0]  # the system message
    common = shared_prefix(first[1]["content"], second[1]["content"])
    for path in ("docs/spec.md", "src/pkg/mean.py"):
        assert (repo / path).read_text() in common, path
    assert "Is the mean right?" not in common and "(mean)" not in common


@pytest.mark.parametrize("name", BUNDLED)
def test_the_request_comes_after_the_files_and_before_the_answer_instructions(name):
    text = (prompts_dir() / f"{name}.md").read_text(encoding="utf-8")
    user = text.split("<!-- user -->\n")[1]
    assert user.index("{{ file_list }}") < user.index("{{ context }}") < user.index("{{ topic }}")
    after_request = user[user.index("{{ prompt }}") :]
    assert (
        "# What to write" in after_request or "# Answer in exactly these sections" in after_request
    )


def test_the_first_template_version_is_kept_byte_for_byte():
    data = (prompts_dir() / "v1" / "default.md").read_bytes()
    assert "sha256:" + hashlib.sha256(data).hexdigest() == DEFAULT_V1_SHA256


def test_an_earlier_version_is_asked_for_by_name_at_version_and_recorded_so(repo, simulator, cli):
    messages = sent_messages(simulator, cli, "--template", "default@v1", prompt="Check it.")
    user = messages[1]["content"]
    assert user.index("Check it.") < user.index("## File 1 of ")
    (record,) = (repo / "reviews").glob("*.request.json")
    template = json.loads(record.read_text())["template"]
    assert template == {"name": "default@v1", "sha256": DEFAULT_V1_SHA256}


def test_a_review_made_with_the_earlier_version_still_verifies(repo, simulator, cli):
    assert review(cli, simulator, "--template", "default@v1").code == 0
    r = cli("verify", "--json")
    assert r.code == 0, r.out + r.err


def test_the_current_version_by_number_is_the_bundled_template(repo, cli):
    def sha(*args: str) -> str:
        r = cli("run", "--dry-run", "--json", "-c", "docs/spec.md", "-p", "x", *args)
        assert r.code == 0, r.err
        digest: str = r.json()["prompt_sha256"]
        return digest

    assert sha("--template", "code-review@v2") == sha("--template", "code-review")


@pytest.mark.parametrize("name", ["default@v3", "default@v0", "nope@v1", "continuation@v1"])
def test_a_version_that_does_not_exist_is_refused_naming_the_choices(name, repo, cli):
    r = cli("run", "--dry-run", "-c", "docs/spec.md", "-p", "x", "--template", name)
    assert r.code == 2
    assert f"unknown template {name!r}; choose from" in r.err


def test_a_continuation_resends_the_whole_earlier_request_first(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    r = review(cli, sim, "--max-tokens", "20", context=("docs", "src"), prompt="Check it.")
    assert r.code == 0, r.err
    first, *later = [json.loads(q.body)["messages"] for q in sim.chat_requests()]
    assert later
    for messages in later:
        assert messages[: len(first)] == first
