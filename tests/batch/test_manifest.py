"""Batch manifests: TOML and JSON Lines, every problem reported at once, precedence, shards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.batch.manifest import (
    ManifestError,
    Shard,
    plan_manifest,
    read_manifest,
    scan_toml_lines,
    shard_of,
)
from deepseek_review.errors import ConfigError
from deepseek_review.reviewing.prompt import list_templates
from tests.support.cli import files_under

GOOD_TOML = """\
# a comment
[defaults]
max_tokens = 512
output_dir = "out"

[[review]]
topic = "spec"
prompt = "Check the mean."
context = "docs/spec.md"

[[review]]
topic = "code"
prompt = "Review the code."
context = ["src/pkg/*.py"]
model = "other-model"
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def toml_entry(topic: str, **keys: Any) -> str:
    lines = ["[[review]]", f'topic = "{topic}"']
    keys.setdefault("prompt", "Check it.")
    keys.setdefault("context", "docs/spec.md")
    for k, v in keys.items():
        lines.append(f"{k} = {json.dumps(v)}")
    return "\n".join(lines) + "\n\n"


def problems_of(path: Path, **kw: Any) -> list[str]:
    with pytest.raises(ManifestError) as info:
        plan_manifest(path, **kw)
    return [str(p) for p in info.value.problems]


# --------------------------------------------------------------------------- reading


def test_toml_manifest_reads_defaults_entries_and_their_lines(repo):
    manifest, problems = read_manifest(write(repo / "reviews.toml", GOOD_TOML))
    assert problems == []
    assert manifest.format == "toml"
    assert manifest.defaults == {"max_tokens": 512, "output_dir": "out"}
    assert [(e.index, e.topic, e.line) for e in manifest.entries] == [
        (1, "spec", 6),
        (2, "code", 11),
    ]
    assert manifest.entries[1].values["context"] == ["src/pkg/*.py"]


def test_jsonl_manifest_reads_one_review_per_line_and_a_defaults_line(repo):
    lines = [
        json.dumps({"defaults": {"max_tokens": 64}}),
        json.dumps({"topic": "a", "prompt": "p", "context": "docs/spec.md"}),
        "",
        json.dumps({"topic": "b", "prompt": "p", "context": ["docs/spec.md"], "model": None}),
    ]
    manifest, problems = read_manifest(write(repo / "jobs.jsonl", "\n".join(lines) + "\n"))
    assert problems == []
    assert manifest.format == "jsonl"
    assert manifest.defaults == {"max_tokens": 64}
    assert [(e.topic, e.line) for e in manifest.entries] == [("a", 2), ("b", 4)]
    assert "model" not in manifest.entries[1].values  # null means "not given"


def test_ndjson_extension_is_json_lines(repo):
    path = write(repo / "jobs.ndjson", json.dumps({"topic": "a", "prompt": "p", "context": "x"}))
    manifest, _ = read_manifest(path)
    assert manifest.format == "jsonl"


def test_unknown_extension_needs_the_format_flag(repo):
    path = write(repo / "jobs.txt", GOOD_TOML)
    with pytest.raises(ConfigError, match="--format"):
        read_manifest(path)
    manifest, problems = read_manifest(path, "toml")
    assert problems == [] and len(manifest.entries) == 2


def test_toml_line_scan_ignores_headers_inside_multiline_strings():
    text = '[[review]]\ntopic = "a"\nprompt = """\n[[review]]\n"""\n\n[[review]]\ntopic = "b"\n'
    lines = scan_toml_lines(text)
    assert lines.reviews == [1, 7]
    assert lines.review_keys[1] == {"topic": 8}


# --------------------------------------------------------------------------- problems


def test_unknown_key_is_reported_with_its_line_and_a_suggestion(repo):
    path = write(repo / "r.toml", toml_entry("a") + toml_entry("b", modle="x"))
    (problem,) = problems_of(path)
    assert problem == "entry 2 (line 8, topic 'b'): unknown key 'modle' (did you mean 'model'?)"


def test_missing_topic_prompt_and_context_are_each_reported(repo):
    path = write(
        repo / "r.toml",
        '[[review]]\nprompt = "p"\ncontext = "docs/spec.md"\n\n'
        '[[review]]\ntopic = "b"\ncontext = "docs/spec.md"\n\n'
        '[[review]]\ntopic = "c"\nprompt = "p"\n',
    )
    assert problems_of(path) == [
        "entry 1 (line 1): missing 'topic'",
        "entry 2 (line 5, topic 'b'): missing 'prompt' (or 'prompt_file')",
        "entry 3 (line 9, topic 'c'): missing 'context' (a path or glob, or a list)",
    ]


def test_bad_types_are_reported(repo):
    path = write(
        repo / "r.toml",
        toml_entry("a", max_tokens="many", stream=1, context=[], extra_body="x"),
    )
    found = problems_of(path)
    assert found == [
        "entry 1 (line 3, topic 'a'): max_tokens must be an integer, not a string ('many')",
        "entry 1 (line 4, topic 'a'): stream must be true or false, not an integer (1)",
        "entry 1 (line 5, topic 'a'): context must be a path or glob, or a non-empty list of "
        "them, not an empty list",
        "entry 1 (line 6, topic 'a'): extra_body must be a table (JSON object), not a string ('x')",
    ]


def test_duplicate_topics_are_reported_naming_the_first(repo):
    path = write(repo / "r.toml", toml_entry("same") + toml_entry("same"))
    (problem,) = problems_of(path)
    assert problem.startswith("entry 2 (line 7, topic 'same'): duplicate topic 'same'")
    assert "first used by entry 1, line 1" in problem


def test_invalid_topic_is_reported_in_manifest_words(repo):
    path = write(repo / "r.toml", toml_entry("no spaces allowed"))
    (problem,) = problems_of(path)
    assert "topic 'no spaces allowed': use letters" in problem
    assert "--topic" not in problem


def test_defaults_may_not_hold_a_topic_or_prompt(repo):
    path = write(repo / "r.toml", '[defaults]\ntopic = "x"\n\n' + toml_entry("a"))
    (problem,) = problems_of(path)
    assert (
        problem
        == "[defaults] (line 2): 'topic' belongs in each [[review]] entry, not in [defaults]"
    )


def test_toml_syntax_error_names_its_line(repo):
    path = write(repo / "r.toml", toml_entry("a") + "topic = \n")
    (problem,) = problems_of(path)
    assert problem.startswith("line 6: not valid TOML")


def test_jsonl_bad_line_is_reported_and_the_other_lines_still_checked(repo):
    lines = [
        json.dumps({"topic": "a", "prompt": "p", "context": "docs/spec.md"}),
        "{not json",
        json.dumps({"topic": "c", "prompt": "p", "context": "docs/spec.md", "colour": 1}),
    ]
    found = problems_of(write(repo / "r.jsonl", "\n".join(lines)))
    assert found[0].startswith("line 2: not a JSON object")
    assert found[1] == "entry 2 (line 3, topic 'c'): unknown key 'colour'"


def test_context_that_matches_nothing_is_reported(repo):
    path = write(repo / "r.toml", toml_entry("a", context="nothing/*.py"))
    (problem,) = problems_of(path)
    assert problem.startswith("entry 1 (line 1, topic 'a'): context pattern nothing/*.py")


def test_context_outside_the_repository_is_reported(repo, tmp_path):
    write(tmp_path / "secret.md", "outside")
    path = write(repo / "r.toml", toml_entry("a", context="../secret.md"))
    (problem,) = problems_of(path)
    assert "outside the repository root" in problem


def test_binary_context_file_is_reported(repo):
    (repo / "blob.bin").write_bytes(b"\x00\x01")
    path = write(repo / "r.toml", toml_entry("a", context="blob.bin"))
    (problem,) = problems_of(path)
    assert "binary" in problem


def test_unknown_template_is_reported(repo):
    path = write(repo / "r.toml", toml_entry("a", template="nope"))
    (problem,) = problems_of(path)
    assert "unknown template 'nope'" in problem


def test_bad_option_value_is_reported_in_manifest_words(repo):
    path = write(repo / "r.toml", toml_entry("a", max_tokens=0))
    (problem,) = problems_of(path)
    assert problem == "entry 1 (line 3, topic 'a'): max_tokens must be positive, got 0"


def test_missing_prompt_file_is_reported(repo):
    path = write(
        repo / "r.toml",
        '[[review]]\ntopic = "a"\nprompt_file = "nope.md"\ncontext = "docs/spec.md"\n',
    )
    (problem,) = problems_of(path)
    assert problem == "entry 1 (line 1, topic 'a'): prompt_file nope.md: no such file"


def test_cli_reports_every_problem_on_its_own_line_and_writes_nothing(
    repo, simulator, cli, tmp_path
):
    write(tmp_path / "outside.md", "outside")
    path = write(
        repo / "reviews.toml",
        toml_entry("ok")
        + toml_entry("typo", modle="x")
        + toml_entry("ok")
        + toml_entry("nomatch", context="none/*.md")
        + toml_entry("out", context="../outside.md"),
    )
    before = files_under(repo)
    r = cli("batch", path.name, "--endpoint", simulator.base_url, "--report", "rep.json")
    assert r.code == 3, r.err
    lines = [ln for ln in r.err.splitlines() if ln.startswith("deepseek-review: reviews.toml:")]
    assert len(lines) == 4
    assert "reviews.toml:8: entry 2 (line 8, topic 'typo'): unknown key 'modle'" in lines[0]
    assert "duplicate topic 'ok'" in lines[1]
    assert "context pattern none/*.md" in lines[2]
    assert "outside the repository root" in lines[3]
    assert "error: manifest reviews.toml: 4 problems; first: entry 2" in r.err
    assert "nothing was sent and nothing was written" in r.err
    assert simulator.chat_requests() == []
    assert files_under(repo) == before


# --------------------------------------------------------------------------- precedence


def models_by_topic(cli: Any, path: Path, *flags: str) -> dict[str, str]:
    r = cli("batch", str(path), "--dry-run", "--json", "--endpoint", "http://127.0.0.1:9", *flags)
    assert r.code == 0, r.err
    return {e["topic"]: e["model"] for e in r.json()["entries"]}


def test_entry_beats_batch_flags_which_beat_defaults(repo, cli):
    body = toml_entry("own", model="entry-model") + toml_entry("plain")
    with_defaults = write(repo / "a.toml", '[defaults]\nmodel = "defaults-model"\n\n' + body)
    assert models_by_topic(cli, with_defaults, "--model", "flag-model") == {
        "own": "entry-model",
        "plain": "flag-model",
    }
    assert models_by_topic(cli, with_defaults) == {
        "own": "entry-model",
        "plain": "defaults-model",
    }
    bare = write(repo / "b.toml", body)
    assert models_by_topic(cli, bare) == {"own": "entry-model", "plain": "deepseek-v4-flash"}


def test_prompt_file_is_relative_to_the_manifest_folder(repo):
    write(repo / "jobs" / "ask.md", "Check the mean carefully.")
    path = write(
        repo / "jobs" / "r.toml",
        '[[review]]\ntopic = "a"\nprompt_file = "ask.md"\ncontext = "docs/spec.md"\n',
    )
    planned = plan_manifest(path)
    (entry,) = planned.entries
    assert "Check the mean carefully." in entry.plan.texts[-1]


def test_context_is_relative_to_the_repository_root_not_the_manifest(repo):
    path = write(repo / "jobs" / "r.toml", toml_entry("a", context="docs/spec.md"))
    (entry,) = plan_manifest(path).entries
    assert [f.path for f in entry.plan.files] == ["docs/spec.md"]


def test_entries_sharing_context_share_the_bytes_read(repo, monkeypatch):
    from deepseek_review.context import read as context_read

    reads: list[str] = []
    real = context_read.read_entries

    def counting(opener, entries, max_file_bytes):
        reads.extend(rel for rel, _ in entries)
        return real(opener, entries, max_file_bytes)

    monkeypatch.setattr(context_read, "read_entries", counting)
    path = write(repo / "r.toml", toml_entry("a") + toml_entry("b"))
    a, b = plan_manifest(path).entries
    assert reads.count(a.plan.files[0].path) == 1
    assert a.plan.files[0].sha256 == b.plan.files[0].sha256


def test_entries_like_others_get_the_request_each_would_get_alone(repo):
    write(repo / "ask.md", "Check the median.")
    entries = (
        toml_entry("a", prompt="Check the mean.")
        + toml_entry("b", prompt="Check the mode.", context=["docs/spec.md", "src/pkg/*.py"])
        + toml_entry("c", prompt="Check the mean.")
        + '[[review]]\ntopic = "d"\nprompt_file = "ask.md"\ncontext = "docs/spec.md"\n\n'
        + toml_entry("e", prompt="Check the mode.", context=["docs/spec.md", "src/pkg/*.py"])
        + toml_entry("f", prompt="Check the mean.", max_tokens=99)
    )
    together = plan_manifest(write(repo / "all.toml", entries)).entries
    for i, planned in enumerate(together):
        alone_toml = entries.split("[[review]]")[i + 1]
        (alone,) = plan_manifest(write(repo / "one.toml", "[[review]]" + alone_toml)).entries
        assert planned.plan.prepared.body_bytes == alone.plan.prepared.body_bytes
        assert planned.plan.options == alone.plan.options


def test_a_problem_entries_share_is_reported_for_each_of_them(repo):
    path = write(
        repo / "r.toml",
        toml_entry("a", template="nope")
        + toml_entry("b")
        + toml_entry("c", template="nope", prompt="Other.")
        + '[[review]]\ntopic = "d"\nprompt_file = "gone.md"\ncontext = "docs/spec.md"\n'
        + 'template = "nope"\n',
    )
    unknown = f"unknown template 'nope'; choose from {', '.join(list_templates())}"
    assert problems_of(path) == [
        f"entry 1 (line 1, topic 'a'): {unknown}",
        f"entry 3 (line 12, topic 'c'): {unknown}",
        "entry 4 (line 18, topic 'd'): prompt_file gone.md: no such file",
    ]


# --------------------------------------------------------------------------- shards


def test_shard_spec_is_parsed_and_checked():
    assert Shard.parse("2/5") == Shard(2, 5)
    for bad in ("5/5", "1/0", "x", "-1/3", "1-3"):
        with pytest.raises(ConfigError):
            Shard.parse(bad)


def test_shards_partition_topics_exactly():
    topics = [f"topic-{i}" for i in range(500)]
    for n in (1, 2, 3, 7):
        shards = [{t for t in topics if Shard(k, n).holds(t)} for k in range(n)]
        assert sum(len(s) for s in shards) == len(topics)
        assert set().union(*shards) == set(topics)


@pytest.mark.parametrize(
    ("topic", "count", "shard"),
    [("spec", 4, 1), ("topic-1", 7, 5), ("mean-module", 4, 3), ("spec-arithmetic", 4, 2),
     ("all-python", 3, 2), ("a", 2, 0)],
)  # fmt: skip
def test_a_topic_falls_in_the_same_shard_on_every_machine_and_version(topic, count, shard):
    """Pinned values of int(sha256(topic)[:16], 16) % N, the documented formula: a change of
    hash or of its slice would move entries between the shards of running CI matrices."""
    assert shard_of(topic, count) == shard


def test_a_shard_plans_only_its_entries_but_checks_every_entry(repo):
    topics = [f"t{i}" for i in range(12)]
    other = next(t for t in topics if not Shard(0, 2).holds(t))
    text = "".join(
        toml_entry(t, context="missing.md" if t == other else "docs/spec.md") for t in topics
    )
    path = write(repo / "r.toml", text)
    planned = plan_manifest(path, shard=Shard(0, 2))
    assert {e.topic for e in planned.entries} == {t for t in topics if Shard(0, 2).holds(t)}
    assert planned.total_entries == 12
    # A structural problem is reported wherever it falls; a planning one only in its shard.
    broken = write(repo / "s.toml", text.replace(f'topic = "{other}"', f'topic = "{other}"\nc = 1'))
    (problem,) = problems_of(broken, shard=Shard(0, 2))
    assert f"topic '{other}'): unknown key 'c'" in problem
