"""Settings: flags > environment > config file > defaults, each with its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepseek_review.config import resolve
from deepseek_review.errors import ConfigError


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
    with pytest.raises(ConfigError, match="DEEPSEEK_REVIEW_MAX_TOKENS: max_tokens must be int"):
        resolve(tmp_path, env={"DEEPSEEK_REVIEW_MAX_TOKENS": "lots"})


def test_an_unknown_config_key_is_refused_naming_the_file(tmp_path):
    write(tmp_path, ".deepseek-review.toml", 'modle = "typo"\n')
    with pytest.raises(ConfigError, match=r"\.deepseek-review\.toml: unknown setting 'modle'"):
        resolve(tmp_path, env={})


def test_a_config_value_of_the_wrong_type_is_refused(tmp_path):
    write(tmp_path, ".deepseek-review.toml", 'max_tokens = "many"\n')
    with pytest.raises(ConfigError, match="max_tokens must be int"):
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
    assert "jobs must be int" in r.err
