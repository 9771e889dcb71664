"""An error about a value names where the value was set (issue 30, item 7): the flag, the
environment variable, the key in ``.deepseek-review.toml`` or ``pyproject.toml``, or the
manifest's entry; and ``config`` shows everything it read, refused values marked."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review import api
from tests.support.config import run_dry

Cli = Callable[..., Any]
CONFIGURATION = Path(__file__).resolve().parents[2] / "docs" / "guide" / "configuration.md"
PYPROJECT = "pyproject.toml [tool.deepseek-review]"


def documented_config_example() -> str:
    """The documented ``pyproject.toml`` example (docs/guide/configuration.md), as a user
    would paste it."""
    block = re.search(r"```toml\n(# pyproject\.toml\n.*?)```", CONFIGURATION.read_text(), re.S)
    assert block is not None
    return block.group(1)


def set_value(
    repo: Path, monkeypatch: pytest.MonkeyPatch, source: str, key: str, value: str
) -> list[str]:
    """``key = value`` set in ``source``; the flags to add to the command line."""
    if source == "flag":
        return [f"--{key.replace('_', '-')}", value]
    if source == "env":
        monkeypatch.setenv(f"DEEPSEEK_REVIEW_{key.upper()}", value)
    elif source == "toml":
        (repo / ".deepseek-review.toml").write_text(f"{key} = {value}\n")
    elif source == "pyproject":
        (repo / "pyproject.toml").write_text(
            f'[project]\nname = "x"\n\n[tool.deepseek-review]\n{key} = {value}\n'
        )
    return []


NAMES = {
    "flag": "--{flag}",
    "env": "DEEPSEEK_REVIEW_{upper}",
    "toml": ".deepseek-review.toml {key}",
    "pyproject": PYPROJECT + " {key}",
}


def named(source: str, key: str) -> str:
    return NAMES[source].format(flag=key.replace("_", "-"), upper=key.upper(), key=key)


@pytest.mark.parametrize("source", ["flag", "env", "toml", "pyproject"])
def test_a_limit_that_refuses_a_file_is_named_where_it_was_set(repo, cli, monkeypatch, source):
    extra = set_value(repo, monkeypatch, source, "max_file_bytes", "10")
    r = run_dry(cli, "--endpoint", "http://127.0.0.1:9", *extra)
    assert r.code == 3
    assert r.err.strip() == (
        "deepseek-review: error: context file docs/spec.md: 61 bytes is over "
        f"{named(source, 'max_file_bytes')} 10"
    )


@pytest.mark.parametrize("source", ["env", "toml", "pyproject"])
def test_an_out_of_range_value_is_named_where_it_was_set(repo, cli, monkeypatch, source):
    set_value(repo, monkeypatch, source, "max_tokens", "0")
    r = run_dry(cli)
    assert r.code == 2
    assert r.err.strip() == (
        f"deepseek-review: error: {named(source, 'max_tokens')} must be positive, got 0"
    )


@pytest.mark.parametrize("source", ["flag", "env", "toml", "pyproject", "entry", "defaults"])
def test_a_batch_names_a_value_where_it_was_set(repo, cli, monkeypatch, source):
    entry = '[[review]]\ntopic = "a"\nprompt = "x"\ncontext = "docs/spec.md"\n'
    extra: list[str] = []
    if source == "entry":
        entry += "max_file_bytes = 10\n"
    elif source == "defaults":
        entry = "[defaults]\nmax_file_bytes = 10\n\n" + entry
    else:
        extra = set_value(repo, monkeypatch, source, "max_file_bytes", "10")
    (repo / "m.toml").write_text(entry)
    r = cli("batch", "m.toml", "--dry-run", "--endpoint", "http://127.0.0.1:9", *extra)
    assert r.code == 3
    shown = "max_file_bytes" if source in ("entry", "defaults") else named(source, "max_file_bytes")
    assert f"context file docs/spec.md: 61 bytes is over {shown} 10" in r.err
    assert "entry 1 (line" in r.err


@pytest.mark.parametrize("source", ["toml", "pyproject"])
def test_a_remote_endpoint_in_the_repository_config_is_refused_naming_the_file_and_key(
    repo, cli, monkeypatch, source
):
    set_value(repo, monkeypatch, source, "endpoint", '"http://gpu-box:11434"')
    r = run_dry(cli)
    assert r.code == 2
    assert r.err.strip() == (
        f"deepseek-review: error: {named(source, 'endpoint')} "
        "http://gpu-box:11434/v1/chat/completions: the repository's config may name only a "
        "loopback endpoint or one the operator chose; choose it with --endpoint, "
        "DEEPSEEK_REVIEW_ENDPOINT or OLLAMA_HOST, or allow it with "
        "DEEPSEEK_REVIEW_ALLOWED_ENDPOINTS"
    )


def test_the_documented_config_example_is_accepted_as_pasted(repo, cli):
    (repo / "pyproject.toml").write_text(documented_config_example())
    r = cli("config")
    assert r.code == 0, r.err
    assert "refused" not in r.out
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--dry-run", "--json")
    assert r.code == 0, r.err
    assert r.json()["template"] == "spec-review"


def test_the_documented_config_example_says_how_to_reach_another_host(repo, cli, monkeypatch):
    example = documented_config_example()
    assert "DEEPSEEK_REVIEW_ALLOWED_ENDPOINTS" in example and "--endpoint" in example
    remote = example.replace(
        'endpoint = "http://localhost:11434"', 'endpoint = "http://gpu-box:11434"'
    )
    (repo / "pyproject.toml").write_text(remote)
    monkeypatch.setenv("DEEPSEEK_REVIEW_ALLOWED_ENDPOINTS", "http://gpu-box:11434")
    r = cli("config", "--json")
    assert r.code == 0, r.err
    assert (
        r.json()["settings"]["endpoint"]["resolved"] == "http://gpu-box:11434/v1/chat/completions"
    )


# --------------------------------------------------------------------------- config


def write_remote_example(repo: Path) -> None:
    example = documented_config_example()
    (repo / "pyproject.toml").write_text(
        example.replace('endpoint = "http://localhost:11434"', 'endpoint = "http://gpu-box:11434"')
    )


def test_config_shows_everything_it_read_and_marks_a_refused_endpoint(repo, cli):
    write_remote_example(repo)
    r = cli("config")
    assert r.code == 2
    lines = r.out.splitlines()
    row = lines.index(next(x for x in lines if x.startswith("endpoint ")))
    assert "http://gpu-box:11434" in lines[row] and PYPROJECT in lines[row]
    assert lines[row + 1].split()[:4] == [
        "refused:",
        "pyproject.toml",
        "[tool.deepseek-review]",
        "endpoint",
    ]
    template = next(x for x in lines if x.startswith("template "))
    assert "spec-review" in template  # what else it read is all there
    assert r.err.strip().startswith(
        "deepseek-review: error: 1 refused setting, marked above; first: "
    )


def test_config_json_is_one_document_with_the_refusals_and_exit_2(repo, cli):
    write_remote_example(repo)
    r = cli("config", "--json")
    assert r.code == 2
    data = r.json()  # one document: the settings, not an error object
    assert data["settings"]["template"]["value"] == "spec-review"
    assert data["settings"]["endpoint"]["resolved"] is None
    (refusal,) = data["refused"]
    assert refusal["key"] == "endpoint"
    assert refusal["name"] == f"{PYPROJECT} endpoint"
    assert refusal["message"].startswith(f"{PYPROJECT} endpoint http://gpu-box:11434")


@pytest.mark.parametrize("name", [".deepseek-review.toml", "pyproject.toml"])
def test_config_marks_every_refused_key_and_suggests_the_closest_setting(repo, cli, name):
    text = 'max_tokenz = 5\napi_key_env = "GITHUB_TOKEN"\nmodel = "m"\n'
    where = ".deepseek-review.toml"
    if name == "pyproject.toml":
        text, where = "[tool.deepseek-review]\n" + text, PYPROJECT
    (repo / name).write_text(text)
    r = cli("config")
    assert r.code == 2
    assert f"{where} max_tokenz: unknown setting (did you mean 'max_tokens'?)" in r.out
    assert f"refused: {where} api_key_env cannot be set in the repository's config" in r.out
    assert next(x for x in r.out.splitlines() if x.startswith("model ")).split()[1] == "m"
    assert r.err.strip().startswith("deepseek-review: error: 2 refused settings, marked above")


def test_run_suggests_the_closest_setting_for_an_unknown_key(repo, cli):
    (repo / "pyproject.toml").write_text("[tool.deepseek-review]\ntemplat = 'spec-review'\n")
    r = run_dry(cli)
    assert r.code == 2
    assert f"{PYPROJECT} templat: unknown setting (did you mean 'template'?)" in r.err


def test_config_marks_a_bad_environment_value_and_shows_what_applies_instead(
    repo, cli, monkeypatch
):
    (repo / ".deepseek-review.toml").write_text("max_tokens = 777\n")
    monkeypatch.setenv("DEEPSEEK_REVIEW_MAX_TOKENS", "lots")
    r = cli("config")
    assert r.code == 2
    lines = r.out.splitlines()
    row = lines.index(next(x for x in lines if x.startswith("max_tokens ")))
    assert lines[row].split()[1:] == ["777", "config", ".deepseek-review.toml"]
    assert (
        lines[row + 1]
        .split(maxsplit=1)[1]
        .startswith("DEEPSEEK_REVIEW_MAX_TOKENS must be an integer")
    )


def test_the_library_configuration_lists_refusals_instead_of_raising(repo):
    write_remote_example(repo)
    found = api.configuration(env={})
    assert found.endpoint is None
    assert [r.key for r in found.refused] == ["endpoint"]
    assert found.settings["template"] == "spec-review"


def test_config_shows_the_key_variable_used_when_none_is_set(repo, cli):
    r = cli("config")
    assert r.code == 0, r.err
    row = next(x for x in r.out.splitlines() if x.startswith("api_key_env "))
    assert "OLLAMA_API_KEY (default, https only)" in row
    assert "(not set)" not in row
    data = cli("config", "--json").json()["settings"]["api_key_env"]
    assert (data["value"], data["effective"]) == (None, "OLLAMA_API_KEY")


# --------------------------------------------------------------------------- verify's settings


def test_a_missing_allowed_signers_file_the_environment_named_is_blamed_on_the_variable(
    repo, cli, monkeypatch, tmp_path
):
    monkeypatch.setenv("DEEPSEEK_REVIEW_ALLOWED_SIGNERS", str(tmp_path / "nope"))
    r = cli("verify")
    assert r.code == 2
    assert r.err.strip() == (
        f"deepseek-review: error: DEEPSEEK_REVIEW_ALLOWED_SIGNERS {tmp_path / 'nope'}: no such file"
    )


@pytest.mark.parametrize("source", ["env", "toml", "pyproject"])
def test_require_signature_without_signers_names_where_it_was_required(
    repo, cli, monkeypatch, source
):
    set_value(repo, monkeypatch, source, "require_signature", "true")
    r = cli("verify")
    assert r.code == 2
    assert r.err.strip() == (
        f"deepseek-review: error: {named(source, 'require_signature')} needs --allowed-signers "
        "(or git's gpg.ssh.allowedSignersFile): whose signatures count?"
    )
