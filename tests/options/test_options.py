"""The option table is the one source: commands, defaults, help, schemas and checks agree with it.

Each test walks the table and something derived from it (the typer commands, the dataclasses'
defaults, the published JSON Schemas, the messages of every source of a value) and fails on
the first mismatch, naming it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import typer

from deepseek_review.errors import ConfigError
from deepseek_review.options import table
from deepseek_review.options.table import OPTIONS, in_scope

ROOT = Path(__file__).resolve().parents[2]
TABLE_COMMANDS = ("run", "continue", "batch", "show")
CLI_OWN = {"as_json", "verbose", "quiet", "help"}


def commands() -> dict[str, Any]:
    from deepseek_review.cli import app

    group = typer.main.get_command(app)
    return dict(group.commands)  # type: ignore[attr-defined]


def params(command: str) -> dict[str, Any]:
    return {p.name: p for p in commands()[command].params if p.name not in CLI_OWN}


# --------------------------------------------------------------------------- the commands


@pytest.mark.parametrize("command", TABLE_COMMANDS)
def test_a_command_has_exactly_the_options_of_its_scope(command):
    assert list(params(command)) == [o.key for o in in_scope(command)]


@pytest.mark.parametrize("command", TABLE_COMMANDS)
def test_every_flag_help_and_default_comes_from_the_table(command):
    for name, param in params(command).items():
        option = OPTIONS[name]
        assert param.help == option.help_text(), name
        if option.argument:
            continue
        assert option.long_flag in param.opts, name
        if option.short:
            assert option.short in param.opts, name
        # "Not given" (None) or a plain switch off: the table's default is applied later,
        # after the environment and the config file, so typer holds no default of its own.
        assert param.required == (command in option.required), name
        assert param.required or param.default in (None, False), name


def test_every_command_spells_a_shared_option_alike():
    """``--repo-root`` of verify, stats and config too (their own options are not the table's)."""
    for command, cmd in commands().items():
        for param in cmd.params:
            option = OPTIONS.get(param.name or "")
            if option is not None and command in option.scopes:
                assert param.help == option.help_text(), (command, param.name)


#: Flags of a hand-written command that share a key with the table but are another option.
NOT_THE_TABLES = {("verify", "jobs")}  # worker processes, not batch's reviews at once


def test_every_command_takes_a_table_option_with_its_help_and_no_default_of_its_own():
    """Commands outside the option's scopes too (``sign --signing-key``, ``attest
    --repo-root``): the table's help and flag, and no default in typer (the table's is applied
    after the environment and the config file)."""
    checked = set()
    for command, cmd in commands().items():
        for param in cmd.params:
            option = OPTIONS.get(param.name or "")
            if option is None or (command, param.name) in NOT_THE_TABLES:
                continue
            assert param.help == option.help_text(), (command, param.name)
            if not option.argument:
                assert option.long_flag in param.opts, (command, param.name)
                assert param.default in (None, False), (command, param.name)
            checked.add(command)
    assert {"sign", "attest", "findings", "verify", "stats", "config"} <= checked


def test_run_continue_and_batch_agree_on_the_help_of_every_option_they_share():
    helps: dict[str, set[str]] = {}
    for command in ("run", "continue", "batch"):
        for name, param in params(command).items():
            helps.setdefault(name, set()).add(param.help)
    shared = {k: v for k, v in helps.items() if sum(k in params(c) for c in TABLE_COMMANDS) > 1}
    assert "max_tokens" in shared and "endpoint" in shared
    assert {k: v for k, v in shared.items() if len(v) != 1} == {}


# --------------------------------------------------------------------------- the defaults


def _leaves(obj: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out |= _leaves(value, f"{prefix}{f.name}.")
        else:
            out[prefix + f.name] = value
    return out


def test_the_library_dataclasses_default_to_the_table():
    """Each default is written once: ReviewOptions and every dataclass below it read it."""
    from deepseek_review.reviewing.pipeline import ReviewOptions
    from deepseek_review.reviewing.setup import REVIEW_FIELDS

    leaves = _leaves(ReviewOptions(context=(), prompt=""))
    mismatched = {
        key: (leaves[path], OPTIONS[key].default)
        for key, path in REVIEW_FIELDS.items()
        if leaves[path] != OPTIONS[key].default
        and not (key == "template" and leaves[path] is None)  # None: the template option's
    }
    assert mismatched == {}


def test_the_other_dataclasses_and_constants_default_to_the_table():
    from deepseek_review.batch.run import BatchOptions
    from deepseek_review.reviewing.continuation import ContinueOptions
    from deepseek_review.reviewing.request import BodyOptions
    from deepseek_review.testing.simulator.server import DEFAULT_MODEL
    from deepseek_review.verification import DEFAULT_FOLDER

    batch = BatchOptions(manifest="m.toml")
    body = BodyOptions(model="m")
    cont = ContinueOptions(path="p")
    found = {
        "jobs": batch.jobs,
        "fail_fast": batch.fail_fast,
        "max_total_tokens": batch.max_total_tokens,
        "resume": batch.resume,
        "max_tokens": body.max_tokens,
        "temperature": body.temperature,
        "stream": cont.stream,
        "force": cont.force,
        "max_continuations": cont.continuation.max_continuations,
        "max_attempts": cont.retry.max_attempts,
        "read_timeout": cont.timeouts.read,
        "output_dir": DEFAULT_FOLDER,
        "model": DEFAULT_MODEL,
    }
    assert {k: v for k, v in found.items() if v != OPTIONS[k].default} == {}


def test_settings_without_environment_or_config_are_the_table_defaults(tmp_path):
    from deepseek_review.options.config import resolve

    settings = resolve(tmp_path, env={})
    assert {k: s.value for k, s in settings.items.items()} == {
        k: o.default for k, o in OPTIONS.items() if o.scopes & {"config_file", "env"}
    }


def test_the_help_shows_each_default_the_table_holds():
    assert OPTIONS["max_tokens"].help_text().endswith("(default: 8192).")
    assert OPTIONS["read_timeout"].help_text().endswith("(default: 600).")
    assert OPTIONS["stream"].help_text().endswith("(default: on).")
    assert "(default" not in OPTIONS["keep_reasoning"].help_text()


# ------------------------------------------------------------- one check, every source


BAD = [
    ("max_tokens", "0", 0, "must be positive, got 0"),
    ("temperature", "3", 3.0, "must be between 0 and 2, got 3.0"),
    ("server", "tgi", "tgi", "must be one of ollama, llama.cpp, vllm, deepseek, not 'tgi'"),
    ("max_continuations", "-1", -1, "must be 0 or more, got -1"),
]


def _run(cli: Any, *args: str) -> Any:
    return cli("run", "--dry-run", "-c", "docs/spec.md", "-p", "x", *args)


@pytest.mark.parametrize(("key", "text", "value", "why"), BAD)
def test_a_flag_is_named_as_the_flag(repo, cli, key, text, value, why):
    r = _run(cli, OPTIONS[key].long_flag, text)
    assert (r.code, r.err.strip()) == (2, f"deepseek-review: error: {OPTIONS[key].long_flag} {why}")


@pytest.mark.parametrize(("key", "text", "value", "why"), BAD)
def test_a_variable_is_named_as_the_variable(repo, cli, monkeypatch, key, text, value, why):
    monkeypatch.setenv(f"DEEPSEEK_REVIEW_{key.upper()}", text)
    r = _run(cli)
    expected = f"deepseek-review: error: DEEPSEEK_REVIEW_{key.upper()} {why}"
    assert (r.code, r.err.strip()) == (2, expected)


@pytest.mark.parametrize(("key", "text", "value", "why"), BAD)
def test_a_config_value_is_named_by_its_file_and_key(repo, cli, key, text, value, why):
    (repo / ".deepseek-review.toml").write_text(f"{key} = {json.dumps(value)}\n")
    r = _run(cli)
    expected = f"deepseek-review: error: .deepseek-review.toml {key} {why}"
    assert (r.code, r.err.strip()) == (2, expected)


@pytest.mark.parametrize(("key", "text", "value", "why"), BAD)
def test_a_manifest_value_is_named_by_its_key_entry_and_line(repo, cli, key, text, value, why):
    (repo / "m.toml").write_text(
        f'[[review]]\ntopic = "a"\nprompt = "x"\ncontext = "docs/spec.md"\n{key} = '
        f"{json.dumps(value)}\n"
    )
    r = cli("batch", "m.toml", "--dry-run")
    assert r.code == 3
    assert f"deepseek-review: m.toml:5: entry 1 (line 5, topic 'a'): {key} {why}\n" in r.err


@pytest.mark.parametrize(("key", "text", "value", "why"), BAD)
def test_a_library_keyword_is_named_by_its_key(repo, key, text, value, why):
    from deepseek_review import api

    with pytest.raises(ConfigError) as info:
        api.plan_review(context="docs/spec.md", prompt="x", **{key: value})
    assert info.value.message == f"{key} {why}"


def test_a_batch_flag_is_named_as_the_flag(repo, cli):
    (repo / "m.toml").write_text(
        '[[review]]\ntopic = "a"\nprompt = "x"\ncontext = "docs/spec.md"\n'
    )
    r = cli("batch", "m.toml", "--dry-run", "--max-tokens", "0")
    assert (r.code, r.err.strip()) == (
        2,
        "deepseek-review: error: --max-tokens must be positive, got 0",
    )


def test_a_library_keyword_of_another_command_is_refused_naming_the_call(repo):
    from deepseek_review import api

    with pytest.raises(ConfigError, match=r"^'fail_fast' is not an option of review\(\)$"):
        api.plan_review(context="docs/spec.md", prompt="x", fail_fast=True)


def test_an_unknown_library_keyword_is_refused_with_the_closest(repo):
    from deepseek_review import api

    with pytest.raises(ConfigError, match=r"^unknown option 'max_token' for review\(\) \(did you "):
        api.plan_review(context="docs/spec.md", prompt="x", max_token=3)


def test_an_option_a_manifest_may_not_set_says_how_the_operator_sets_it(repo, cli):
    (repo / "m.toml").write_text(
        '[[review]]\ntopic = "a"\nprompt = "x"\ncontext = "docs/spec.md"\nmax_attempts = 2\n'
    )
    r = cli("batch", "m.toml", "--dry-run")
    assert r.code == 3
    assert (
        "entry 1 (line 5, topic 'a'): 'max_attempts' cannot be set in a manifest (it applies to "
        "the whole run, not to one review); use --max-attempts, DEEPSEEK_REVIEW_MAX_ATTEMPTS or "
        "the config file"
    ) in r.err


def test_a_core_message_names_an_option_as_the_calling_layer_does(repo, cli):
    """No rewriting: the same refusal reads --max-file-bytes on the command line and
    max_file_bytes in a manifest and in a library call."""
    from deepseek_review import api
    from deepseek_review.errors import InputError

    r = _run(cli, "--max-file-bytes", "10")
    assert "bytes is over --max-file-bytes 10" in r.err
    (repo / "m.toml").write_text(
        '[[review]]\ntopic = "a"\nprompt = "x"\ncontext = "docs/spec.md"\nmax_file_bytes = 10\n'
    )
    r = cli("batch", "m.toml", "--dry-run")
    assert r.code == 3 and "bytes is over max_file_bytes 10" in r.err
    with pytest.raises(InputError, match=r"bytes is over max_file_bytes 10$"):
        api.plan_review(context="docs/spec.md", prompt="x", max_file_bytes=10)


# --------------------------------------------------------------------------- the schemas


def test_the_published_schemas_are_the_tables():
    import scripts.option_schemas as published

    assert published.stale() == []


@pytest.mark.parametrize("name", ["manifest", "config"])
def test_the_published_schemas_are_json_schema_draft_4_as_taplo_reads(name):
    schema = json.loads((ROOT / "schemas" / f"deepseek-review-{name}.schema.json").read_text())
    jsonschema.Draft4Validator.check_schema(schema)


def _manifest_examples() -> list[str]:
    """Every ``# reviews.toml`` TOML block of the README and the docs."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    texts = [page.read_text(encoding="utf-8") for page in pages]
    blocks = [b for t in texts for b in re.findall(r"```toml\n(.*?)```", t, re.S)]
    return [b for b in blocks if b.startswith("# reviews.toml")]


def test_the_documented_manifests_validate_against_the_published_schema():
    import tomllib

    schema = json.loads((ROOT / "schemas" / "deepseek-review-manifest.schema.json").read_text())
    examples = _manifest_examples()
    assert len(examples) >= 2
    for text in examples:
        jsonschema.Draft4Validator(schema).validate(tomllib.loads(text))


@pytest.mark.parametrize(
    "line",
    ['modle = "x"', 'api_key_env = "GITHUB_TOKEN"', "allow_secrets = true", "max_tokens = 0",
     'server = "tgi"', "max_attempts = 3"],
)  # fmt: skip
def test_an_editor_refuses_what_batch_refuses(repo, cli, line):
    import tomllib

    text = f'[[review]]\ntopic = "a"\nprompt = "x"\ncontext = "docs/spec.md"\n{line}\n'
    schema = json.loads((ROOT / "schemas" / "deepseek-review-manifest.schema.json").read_text())
    assert not jsonschema.Draft4Validator(schema).is_valid(tomllib.loads(text))
    (repo / "m.toml").write_text(text)
    r = cli("batch", "m.toml", "--dry-run")
    assert r.code == 3
    assert "m.toml:5: entry 1 (line 5, topic 'a'): " in r.err


def test_the_config_schema_takes_what_the_config_file_takes():
    import tomllib

    schema = json.loads((ROOT / "schemas" / "deepseek-review-config.schema.json").read_text())
    good = tomllib.loads('model = "m"\nmax-tokens = 100\nread_timeout = 5.5\njobs = 2\n')
    assert jsonschema.Draft4Validator(schema).is_valid(good)
    for bad in ('api_key_env = "X"', "max_tokens = 0", "prompt = 'p'"):
        assert not jsonschema.Draft4Validator(schema).is_valid(tomllib.loads(bad)), bad


def test_the_table_module_is_cheap_to_import():
    import subprocess
    import sys

    code = (
        "import sys, deepseek_review.options.table, deepseek_review.options.schema; "
        "print(sorted(m for m in ('httpx', 'jsonschema', 'typer') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_scopes_name_only_known_places():
    places = set(table.COMMANDS) | {table.ENTRY, table.DEFAULTS, table.CONFIG_FILE, table.ENV}
    assert {s for o in OPTIONS.values() for s in o.scopes} <= places


def test_the_documented_tables_of_options_are_the_tables():
    import scripts.option_docs as docs

    for path in docs.DOCS:
        text = path.read_text(encoding="utf-8")
        assert docs.BLOCK.search(text), path.name
        assert docs.render(text) == text, f"{path.name}: run python scripts/option_docs.py"
