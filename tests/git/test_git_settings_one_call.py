"""git's signing settings read with ONE ``git config`` (issue 17: every ``verify`` asked for
``gpg.ssh.allowedSignersFile`` with two git processes, ``--global`` then ``--system``).

Each test holds the one-call lookup to what asking each scope on its own says (the
reference below runs git exactly as the lookup did before), and to the value a user expects.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from deepseek_review.signing.keys import _git_setting

NAME = "gpg.ssh.allowedSignersFile"


def _reference(root: Path, name: str) -> str | None:
    """The user's value, else the system's, asked scope by scope (the old lookup)."""
    for scope in ("--global", "--system"):
        out = subprocess.run(
            ["git", "config", scope, "--get", name], cwd=root, capture_output=True, check=False
        )
        if out.returncode == 0 and out.stdout.strip():
            return os.fsdecode(out.stdout.strip())
    return None


@pytest.fixture
def system_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A system config file of the test's own, read as git reads /etc/gitconfig."""
    path = tmp_path / "system-gitconfig"
    path.write_text("", encoding="utf-8")
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM", raising=False)
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(path))
    return path


def _global() -> Path:
    return Path(os.environ["GIT_CONFIG_GLOBAL"])


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def git_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``git`` first on PATH that logs each call, then runs the real one."""
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    bin_dir, log = tmp_path / "bin", tmp_path / "git-calls.log"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real.stdout.strip()} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def test_the_users_setting_is_read_with_one_git_process(repo, system_config, git_calls):
    _write(_global(), '[gpg "ssh"]\n\tallowedSignersFile = /home/me/signers\n')
    assert _git_setting(repo, NAME) == "/home/me/signers"
    assert len(git_calls.read_text().splitlines()) == 1
    assert _reference(repo, NAME) == "/home/me/signers"


def test_the_system_setting_counts_when_the_user_has_none(repo, system_config, git_calls):
    _write(system_config, '[gpg "ssh"]\n\tallowedSignersFile = /etc/signers\n')
    assert _git_setting(repo, NAME) == "/etc/signers"
    assert len(git_calls.read_text().splitlines()) == 1
    assert _reference(repo, NAME) == "/etc/signers"


def test_an_empty_user_setting_falls_back_to_the_system_one(repo, system_config):
    _write(_global(), '[gpg "ssh"]\n\tallowedSignersFile = "  "\n')
    _write(system_config, '[gpg "ssh"]\n\tallowedSignersFile = /etc/signers\n')
    assert _git_setting(repo, NAME) == _reference(repo, NAME) == "/etc/signers"


def test_the_repositorys_own_setting_is_never_used(repo, system_config):
    subprocess.run(["git", "config", "--local", NAME, "/planted/signers"], cwd=repo, check=True)
    assert _git_setting(repo, NAME) is None
    assert _reference(repo, NAME) is None


def test_a_repository_config_git_cannot_parse_reads_as_asking_each_scope_does(repo, system_config):
    """git refuses ``--global --get`` too when the repository's config is broken: the one
    call, failing, must not turn that into a different answer."""
    _write(_global(), '[gpg "ssh"]\n\tallowedSignersFile = /home/me/signers\n')
    with (repo / ".git" / "config").open("a", encoding="utf-8") as f:
        f.write("[broken\n")
    assert _git_setting(repo, NAME) == _reference(repo, NAME)


def test_the_last_of_several_user_values_counts_and_includes_are_not_followed(
    repo, system_config, tmp_path
):
    included = tmp_path / "included"
    _write(included, '[gpg "ssh"]\n\tallowedSignersFile = /included/signers\n')
    _write(
        _global(),
        '[gpg "ssh"]\n\tallowedSignersFile = /first\n\tallowedSignersFile = /second\n'
        f"[include]\n\tpath = {included}\n",
    )
    assert _git_setting(repo, NAME) == _reference(repo, NAME) == "/second"


def test_names_match_as_git_matches_them(repo, system_config):
    _write(
        _global(),
        '[GPG "ssh"]\n\tALLOWEDSIGNERSFILE = /upper\n[gpg "SSH"]\n\tallowedsignersfile = /x\n',
    )
    assert _git_setting(repo, NAME) == _reference(repo, NAME) == "/upper"


def test_without_the_system_config_git_config_system_is_still_asked(
    repo, system_config, monkeypatch
):
    _write(system_config, '[gpg "ssh"]\n\tallowedSignersFile = /etc/signers\n')
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    assert _git_setting(repo, NAME) == _reference(repo, NAME) == "/etc/signers"


def test_no_setting_anywhere_costs_one_git_process(repo, system_config, git_calls):
    """The common ``verify``: nothing configured, found out with one process, not two."""
    assert _git_setting(repo, NAME) is None
    assert len(git_calls.read_text().splitlines()) == 1
    assert _reference(repo, NAME) is None


def test_a_setting_changed_between_two_reads_is_read_afresh(repo, system_config):
    """Nothing of one verify's reading of git's config is kept for the next one."""
    assert _git_setting(repo, NAME) is None
    _write(_global(), '[gpg "ssh"]\n\tallowedSignersFile = /home/me/signers\n')
    assert _git_setting(repo, NAME) == _reference(repo, NAME) == "/home/me/signers"
