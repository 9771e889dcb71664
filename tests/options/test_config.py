"""Settings: flags > environment > config file > defaults, each with its source."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.errors import ConfigError
from deepseek_review.options.config import resolve
from tests.support.config import run_dry


def write(root: Path, name: str, text: str) -> None:
    (root / name).write_text(text, encoding="utf-8")


def test_defaults_apply_without_flags_env_or_file(tmp_path):
    s = resolve(tmp_path, env={})
    assert (s["model"], s.items["model"].source) == ("deepseek-v4-flash", "default")
    assert s["max_tokens"] == 8192


def test_pyproject_table_overrides_defaults(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.deepseek-review]\nmodel = "m1"\nmax-tokens = 100\n')
    s = resolve(tmp_path, env={})
    assert (s["model"], s["max_tokens"]) == ("m1", 100)
    assert s.items["model"].source == "config pyproject.toml [tool.deepseek-review]"


def test_own_config_file_is_read(tmp_path):
    write(tmp_path, ".deepseek-review.toml", 'output_dir = "out/reviews"\n')
    s = resolve(tmp_path, env={})
    assert s["output_dir"] == "out/reviews"
    assert s.items["output_dir"].source == "config .deepseek-review.toml"


def test_environment_overrides_the_config_file(tmp_path):
    write(tmp_path, ".deepseek-review.toml", 'model = "from-file"\n')
    s = resolve(tmp_path, env={"DEEPSEEK_REVIEW_MODEL": "from-env"})
    assert (s["model"], s.items["model"].source) == ("from-env", "env DEEPSEEK_REVIEW_MODEL")


def test_flags_override_the_environment(tmp_path):
    s = resolve(tmp_path, flags={"model": "from-flag"}, env={"DEEPSEEK_REVIEW_MODEL": "x"})
    assert (s["model"], s.items["model"].source) == ("from-flag", "flag")


def test_ollama_host_in_the_environment_beats_a_configured_endpoint(tmp_path):
    write(tmp_path, ".deepseek-review.toml", 'endpoint = "http://10.0.0.1:11434"\n')
    s = resolve(tmp_path, env={"OLLAMA_HOST": "127.0.0.1:9999"})
    assert s.items["endpoint"].source == "env OLLAMA_HOST"


def test_environment_values_are_typed(tmp_path):
    s = resolve(tmp_path, env={"DEEPSEEK_REVIEW_STREAM": "false", "DEEPSEEK_REVIEW_JOBS": "8"})
    assert (s["stream"], s["jobs"]) == (False, 8)


def test_an_environment_value_of_the_wrong_type_is_refused_naming_it(tmp_path):
    message = "DEEPSEEK_REVIEW_MAX_TOKENS must be an integer, not 'lots'"
    with pytest.raises(ConfigError, match=message):
        resolve(tmp_path, env={"DEEPSEEK_REVIEW_MAX_TOKENS": "lots"})


def test_an_unknown_config_key_is_refused_naming_the_file(tmp_path):
    write(tmp_path, ".deepseek-review.toml", 'modle = "typo"\n')
    with pytest.raises(ConfigError, match=r"\.deepseek-review\.toml modle: unknown setting"):
        resolve(tmp_path, env={})


def test_a_config_value_of_the_wrong_type_is_refused(tmp_path):
    write(tmp_path, ".deepseek-review.toml", 'max_tokens = "many"\n')
    with pytest.raises(
        ConfigError, match=r"max_tokens must be an integer, not a string \('many'\)"
    ):
        resolve(tmp_path, env={})


def test_malformed_config_toml_is_refused(tmp_path):
    write(tmp_path, ".deepseek-review.toml", "model = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        resolve(tmp_path, env={})


def test_settings_in_both_files_are_refused(tmp_path):
    write(tmp_path, ".deepseek-review.toml", 'model = "a"\n')
    write(tmp_path, "pyproject.toml", '[tool.deepseek-review]\nmodel = "b"\n')
    with pytest.raises(ConfigError, match="keep one"):
        resolve(tmp_path, env={})


def test_a_pyproject_without_the_table_is_not_a_config(tmp_path):
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n')
    write(tmp_path, ".deepseek-review.toml", 'model = "a"\n')
    assert resolve(tmp_path, env={})["model"] == "a"


def test_config_command_shows_values_and_sources(repo, cli, monkeypatch):
    write(repo, ".deepseek-review.toml", 'model = "m-file"\n')
    monkeypatch.setenv("DEEPSEEK_REVIEW_MAX_TOKENS", "1234")
    r = cli("config", "--json")
    assert r.code == 0, r.err
    settings = r.json()["settings"]
    assert settings["model"] == {"value": "m-file", "source": "config .deepseek-review.toml"}
    assert settings["max_tokens"] == {"value": 1234, "source": "env DEEPSEEK_REVIEW_MAX_TOKENS"}
    assert settings["endpoint"]["resolved"] == "http://localhost:11434/v1/chat/completions"


def test_config_command_reports_a_bad_config_with_exit_2(repo, cli):
    write(repo, ".deepseek-review.toml", "jobs = true\n")
    r = cli("config")
    assert r.code == 2
    assert ".deepseek-review.toml jobs must be an integer, not a boolean" in r.err


def test_run_takes_model_and_endpoint_from_the_config_file(repo, cli):
    write(repo, ".deepseek-review.toml", 'model = "m-cfg"\nendpoint = "http://127.0.0.1:9/v1"\n')
    data = run_dry(cli).json()
    assert data["model"] == "m-cfg"
    assert data["endpoint"] == "http://127.0.0.1:9/v1/chat/completions"


def test_run_flag_beats_environment_beats_config(repo, cli, monkeypatch):
    write(repo, ".deepseek-review.toml", 'model = "m-cfg"\n')
    monkeypatch.setenv("DEEPSEEK_REVIEW_MODEL", "m-env")
    assert run_dry(cli).json()["model"] == "m-env"
    assert run_dry(cli, "--model", "m-flag").json()["model"] == "m-flag"


def test_run_writes_into_the_configured_output_folder(repo, simulator, cli):
    write(repo, "pyproject.toml", '[tool.deepseek-review]\noutput_dir = "out/reviews"\n')
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", simulator.base_url, "--json")
    assert r.code == 0, r.err
    assert r.json()["segments"][0]["answer_path"].startswith("out/reviews/")


def test_configured_template_is_used_unless_a_template_file_is_given(repo, cli):
    write(repo, ".deepseek-review.toml", 'template = "spec-review"\n')
    assert run_dry(cli).json()["template"] == "spec-review"
    (repo / "t.md").write_text("<!-- user -->\n{{ prompt }}\n{{ context }}\n", encoding="utf-8")
    assert run_dry(cli, "--template-file", "t.md").json()["template"] == "t.md"


def test_configured_limits_apply_to_context(repo, cli):
    write(repo, ".deepseek-review.toml", "max_file_bytes = 10\n")
    r = run_dry(cli)
    assert r.code == 3
    assert "over .deepseek-review.toml max_file_bytes 10" in r.err


def batch_models(cli: Any, manifest: str) -> dict[str, str]:
    r = cli("batch", manifest, "--dry-run", "--json")
    assert r.code == 0, r.err
    return {e["topic"]: e["model"] for e in r.json()["entries"]}


def test_batch_uses_the_config_below_the_manifest_defaults(repo, cli):
    write(repo, ".deepseek-review.toml", 'model = "m-cfg"\n')
    entry = '[[review]]\ntopic = "{t}"\nprompt = "x"\ncontext = "docs/spec.md"\n'
    write(repo, "a.toml", entry.format(t="one"))
    write(repo, "b.toml", '[defaults]\nmodel = "m-defaults"\n' + entry.format(t="two"))
    assert batch_models(cli, "a.toml") == {"one": "m-cfg"}
    assert batch_models(cli, "b.toml") == {"two": "m-defaults"}


# ---------------------------------------------------------------------- errors name their source


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DEEPSEEK_REVIEW_MAX_TOKENS", "0", "max_tokens must be positive, got 0"),
        ("DEEPSEEK_REVIEW_MAX_ATTEMPTS", "0", "max_attempts must be at least 1, got 0"),
        (
            "DEEPSEEK_REVIEW_READ_TIMEOUT",
            "nan",
            "read_timeout must be a positive number of seconds, got nan",
        ),
        ("DEEPSEEK_REVIEW_TEMPERATURE", "3", "temperature must be between 0 and 2, got 3.0"),
        ("DEEPSEEK_REVIEW_SERVER", "tgi", "server must be one of ollama, llama.cpp, vllm"),
        ("DEEPSEEK_REVIEW_CONTINUATION_STYLE", "x", "continuation_style must be one of prefill"),
    ],
)
def test_a_bad_environment_value_is_blamed_on_the_variable_not_a_flag(
    repo, cli, monkeypatch, name, value, message
):
    monkeypatch.setenv(name, value)
    r = cli("run", "--dry-run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 2
    assert f"{name} {message.split(' ', 1)[1]}" in r.err
    assert "--" not in r.err.split("error:", 1)[1]


def test_a_bad_config_value_is_blamed_on_the_file(repo, cli):
    write(repo, ".deepseek-review.toml", "max_tokens = 0\n")
    r = cli("run", "--dry-run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 2
    assert r.err.strip() == (
        "deepseek-review: error: .deepseek-review.toml max_tokens must be positive, got 0"
    )


def test_an_unknown_deepseek_review_variable_is_named_with_a_suggestion(repo, cli, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_REVIEW_MAX_TOKEN", "5")
    r = cli("run", "--dry-run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 0, r.err
    assert (
        "DEEPSEEK_REVIEW_MAX_TOKEN is not a setting of deepseek-review; ignored "
        "(did you mean DEEPSEEK_REVIEW_MAX_TOKENS?)"
    ) in r.err


def test_the_variables_that_are_not_settings_are_not_called_unknown(repo, cli, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_REVIEW_ALLOWED_ENDPOINTS", "http://127.0.0.1:9")
    r = cli("run", "--dry-run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 0, r.err
    assert "not a setting" not in r.err


def test_the_variables_the_pre_commit_hooks_read_are_not_called_unknown(repo, cli, monkeypatch):
    """A hook's variable (``DEEPSEEK_REVIEW_HOOK_FAIL_ON``) is set in the environment the
    hook's ``run`` and ``findings`` read: they must not call it ignored."""
    hooks = (Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml").read_text("utf-8")
    named = set(re.findall(r"\$\{?(DEEPSEEK_REVIEW_[A-Z_]+)", hooks))
    assert named, "the hooks read a variable of ours"
    for name in named:
        monkeypatch.setenv(name, "major")
    r = cli("run", "--dry-run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 0, r.err
    assert "not a setting" not in r.err


def test_config_shows_an_unset_value_as_not_set(repo, cli):
    r = cli("config")
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if x.startswith("continuation_model"))
    assert "(not set)" in line
    assert "None" not in r.out
