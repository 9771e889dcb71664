"""What a hostile repository's git setup cannot do (issue #29, items 4, 5, 8 and 14).

The pull request's files and ``.git/config`` are the attacker's; the command line and the
environment are the operator's. A filter program named by the repository's config never runs
(whatever git command the package starts, and however the index was left); a ``git`` or
``ssh-keygen`` planted in the working folder is never found through an empty or relative
``PATH`` entry; a change's own ``.gitattributes`` cannot mark its files as noise; and
``core.worktree``/``core.bare`` cannot move the root the review reads from.
"""

from __future__ import annotations

import ast
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.git.runner import (
    FILTER_FREE_COMMANDS,
    forget_git_facts,
    git_command,
    runs_filters,
)
from tests.support.git import base_commit, commit, dry, git, logged_git
from tests.support.sshkeys import allowed_signers, make_key, needs_openssh

Cli = Callable[..., Any]

# --------------------------------------------------------------------------- filters (item 4)

#: The filter keys a hostile .git/config sets, by the attack's name.
FILTER_KINDS = {
    "clean": ("clean",),
    "process": ("process",),
    "smudge-and-clean-required": ("clean", "smudge", "required"),
}


def _install_filter(repo: Path, marker: Path, keys: tuple[str, ...]) -> None:
    """``* filter=evil`` committed in .gitattributes is already there; .git/config names a
    program for each of ``keys`` that appends to ``marker`` (and passes the bytes through)."""
    hook = repo.parent / "evil-filter.sh"
    hook.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\ncat\n', encoding="utf-8")
    hook.chmod(0o755)
    for key in keys:
        value = "true" if key == "required" else str(hook)
        git(repo, "config", f"filter.evil.{key}", value)


def _stale_index(repo: Path) -> None:
    """Every tracked file's time set after the index was written: git re-reads (and would
    filter) what it cannot trust from the index's stat data."""
    for rel in git(repo, "ls-files", "-z").split("\0"):
        if rel:
            os.utime(repo / rel)


@pytest.fixture
def reviewed(repo: Path, cli: Cli, simulator: Any) -> dict[str, str]:
    """A repository whose ``.gitattributes`` sends every file through the ``evil`` filter: a
    base, a reviewed commit on it, a commit after the review, and a staged change. The
    filter program is installed afterwards by each test (git itself ran it while the
    repository was built)."""
    (repo / ".gitattributes").write_text("* filter=evil\n", encoding="utf-8")
    (repo / ".gitignore").write_text("reviews/\n", encoding="utf-8")
    base = base_commit(repo)
    commit(repo, "one", {"src/pkg/one.py": "ONE = 1\n"})
    r = cli("run", "-p", "x", "--diff", f"{base}..HEAD", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    commit(repo, "two", {"src/pkg/two.py": "TWO = 2\n"})
    (repo / "src" / "pkg" / "three.py").write_text("THREE = 3\n", encoding="utf-8")
    git(repo, "add", "src/pkg/three.py")
    return {"base": base}


def _commands(base: str, endpoint: str) -> dict[str, list[str]]:
    """A representative command of each kind that runs git, by name."""
    ask = ["-p", "x", "--dry-run"]
    return {
        "-c": ["run", *ask, "-c", "docs/spec.md"],
        "-c folder": ["run", *ask, "-c", "src"],
        "run": ["run", "-p", "x", "-c", "docs/spec.md", "--endpoint", endpoint],
        "--staged": ["run", *ask, "--staged"],
        "--diff": ["run", *ask, "--diff", base],
        "--diff --whole-files": ["run", *ask, "--diff", f"{base}..HEAD", "--whole-files"],
        "--rev": ["run", *ask, "--rev", "HEAD", "-c", "src"],
        "--since-last-review": ["run", *ask, "--diff", f"{base}..HEAD", "--since-last-review"],
        "verify": ["verify"],
    }


COMMANDS = list(_commands("B", "E"))


@pytest.mark.parametrize("kind", list(FILTER_KINDS))
@pytest.mark.parametrize("command", COMMANDS)
def test_no_command_runs_a_filter_program_from_the_repository_config(
    repo: Path, reviewed: dict[str, str], cli: Cli, simulator: Any, command: str, kind: str
) -> None:
    marker = repo.parent / "filter-ran"
    _install_filter(repo, marker, FILTER_KINDS[kind])
    _stale_index(repo)
    r = cli(*_commands(reviewed["base"], simulator.base_url)[command])
    assert r.code == 0, r.err
    assert not marker.exists(), marker.read_text()


def test_a_staged_review_is_refused_when_a_filter_driver_cannot_be_switched_off(
    repo: Path, reviewed: dict[str, str], cli: Cli
) -> None:
    marker = repo.parent / "filter-ran"
    (repo / ".gitattributes").write_text("* filter=a=b\n", encoding="utf-8")
    hook = repo.parent / "evil-filter.sh"
    _install_filter(repo, marker, ())
    git(repo, "config", "filter.a=b.clean", str(hook))  # -c cannot name this key
    _stale_index(repo)
    r = cli("run", "-p", "x", "--dry-run", "--staged")
    assert r.code == 2
    assert r.err.strip() == (
        f"deepseek-review: error: the git config of the repository at {repo} defines the filter "
        "driver 'a=b', which cannot be switched off (a '=' in its name): refused"
    )
    assert not marker.exists()


@pytest.mark.parametrize("how", ["include.path", "config.worktree"])
def test_a_filter_defined_outside_the_repository_config_file_never_runs(
    repo: Path, reviewed: dict[str, str], cli: Cli, how: str
) -> None:
    """An included file committed in the tree, or the worktree's own config: each is the
    repository's, not the operator's."""
    marker = repo.parent / "filter-ran"
    hook = repo.parent / "evil-filter.sh"
    hook.write_text(f'#!/bin/sh\necho ran >> "{marker}"\ncat\n', encoding="utf-8")
    hook.chmod(0o755)
    if how == "include.path":
        (repo / "evil.cfg").write_text(f'[filter "evil"]\n\tclean = {hook}\n', encoding="utf-8")
        git(repo, "config", "include.path", "../evil.cfg")
    else:
        git(repo, "config", "extensions.worktreeConfig", "true")
        git(repo, "config", "--worktree", "filter.evil.clean", str(hook))
    _stale_index(repo)
    assert dry(cli, "--staged")["git"]["diff"]["shown"] == ["src/pkg/three.py"]
    assert not marker.exists()


def test_the_staged_review_still_shows_the_staged_change_with_the_filters_off(
    repo: Path, reviewed: dict[str, str], cli: Cli
) -> None:
    marker = repo.parent / "filter-ran"
    _install_filter(repo, marker, FILTER_KINDS["clean"])
    _stale_index(repo)
    assert dry(cli, "--staged")["git"]["diff"]["shown"] == ["src/pkg/three.py"]
    assert not marker.exists()


def test_every_git_command_the_package_runs_is_filter_free_or_runs_with_the_filters_off(
    repo: Path, reviewed: dict[str, str], simulator: Any, tmp_path: Path
) -> None:
    """Every git process of every representative command, recorded by a logging ``git``
    first on PATH: a subcommand the rule does not hold filter-free carries the filter off;
    the filter-free ones ran, as recorded, against the stale index without running it."""
    marker = repo.parent / "filter-ran"
    _install_filter(repo, marker, FILTER_KINDS["clean"])
    folder, log = logged_git(tmp_path)
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    for args in _commands(reviewed["base"], simulator.base_url).values():
        _stale_index(repo)
        proc = subprocess.run(
            [sys.executable, "-m", "deepseek_review", *args],
            cwd=repo, capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert proc.returncode == 0, (args, proc.stderr)
    calls = [c.split() for c in log.read_text(encoding="utf-8").splitlines()]
    uncovered = [
        " ".join(c) for c in calls if runs_filters(_args(c)) and "filter.evil.clean=" not in c
    ]
    assert uncovered == []
    ran = {_subcommand(c) for c in calls}
    assert {"write-tree", "update-index"} <= ran  # the filtering kinds were reached
    assert ran - {"write-tree", "update-index"} <= FILTER_FREE_COMMANDS
    assert not marker.exists(), marker.read_text()


def _args(call: list[str]) -> list[str]:
    """A recorded call's arguments after git's own ``--no-pager``."""
    return call[1:] if call[:1] == ["--no-pager"] else call


#: The modules that start a program, each through its one runner: git's (argv from
#: ``repo.git_command``: the safe config, filters off; gitread's one ``cat-file --batch`` a
#: verify run keeps open) and ssh-keygen's.
PROCESS_STARTERS = {"git/runner.py", "git/objects.py", "signing/sshsig.py"}
_STARTERS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput",
                   "getstatusoutput"},
    "os": {"system", "popen", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp",
           "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp",
           "spawnvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "shutil": {"which"},
}  # fmt: skip


def _process_starts() -> dict[str, set[str]]:
    """Every module of the package that names a function starting a program (or looking
    one up), with those functions."""
    package = Path(__file__).resolve().parents[2] / "deepseek_review"
    found: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.attr in _STARTERS.get(node.value.id, ())
            ):
                found.setdefault(path.relative_to(package).as_posix(), set()).add(
                    f"{node.value.id}.{node.attr}"
                )
    return found


def test_every_program_the_package_starts_goes_through_one_of_its_runners() -> None:
    """The enumeration's other half: no module starts git (or anything) on its own, so every
    git command is one ``repo.git_command`` built, under the filter rule; programs are looked
    up in one place (:mod:`deepseek_review.git.programs`)."""
    starts = _process_starts()
    assert starts.pop("git/programs.py") == {"shutil.which"}
    assert set(starts) == PROCESS_STARTERS
    assert all(calls <= {"subprocess.run", "subprocess.Popen"} for calls in starts.values())


def _subcommand(call: list[str]) -> str:
    words = _args(call)
    while words[:1] == ["-c"]:
        words = words[2:]
    return words[0]


@pytest.mark.parametrize(
    "args",
    [
        ["write-tree"],
        ["update-index", "--refresh"],
        ["status"],
        ["diff", "HEAD"],
        ["read-tree", "HEAD"],
        ["add", "-A"],
        ["hash-object", "docs/spec.md"],
        ["-c", "core.quotePath=false", "checkout", "--", "."],
        ["cat-file", "--filters", "HEAD:docs/spec.md"],
        ["cat-file", "--batch", "--textconv"],
        ["ls-files", "--modified"],
        ["ls-files", "-m"],
        ["ls-files", "--eol"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_subcommand_not_known_to_be_filter_free_runs_with_the_repository_filters_off(
    repo: Path, args: list[str]
) -> None:
    _install_filter(repo, repo.parent / "filter-ran", FILTER_KINDS["smudge-and-clean-required"])
    argv = git_command(repo, args)
    assert argv is not None
    for key in ("clean=", "smudge=", "process=", "required=false"):
        assert f"filter.evil.{key}" in argv


def test_a_filter_free_subcommand_is_run_as_asked(repo: Path) -> None:
    _install_filter(repo, repo.parent / "filter-ran", FILTER_KINDS["clean"])
    argv = git_command(repo, ["-c", "core.quotePath=false", "ls-files", "-z", "--cached"])
    assert argv is not None
    assert not any(a.startswith("filter.") for a in argv)


def test_write_tree_with_the_filters_off_writes_the_staged_tree(repo: Path) -> None:
    """Switched off, not broken: the tree is that of the staged bytes."""
    (repo / ".gitattributes").write_text("* filter=evil\n", encoding="utf-8")
    base_commit(repo)
    marker = repo.parent / "filter-ran"
    _install_filter(repo, marker, FILTER_KINDS["smudge-and-clean-required"])
    _stale_index(repo)
    argv = git_command(repo, ["write-tree"])
    assert argv is not None
    out = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert not marker.exists()


# --------------------------------------------------------------------------- programs (item 5)


def _plant(folder: Path, name: str, marker: Path) -> None:
    planted = folder / name
    planted.write_text(f'#!/bin/sh\necho "{name} $*" >> "{marker}"\nexit 1\n', encoding="utf-8")
    planted.chmod(planted.stat().st_mode | stat.S_IXUSR)


#: PATH spellings that name the working folder (the repository) besides absolute folders.
RELATIVE_PATHS = {
    "leading empty": lambda p: os.pathsep + p,
    "trailing empty": lambda p: p + os.pathsep,
    "middle empty": lambda p: p.replace(os.pathsep, os.pathsep * 2, 1) or p,
    "dot": lambda p: "." + os.pathsep + p,
    "relative folder": lambda p: "tools" + os.pathsep + p,
}


@needs_openssh
@pytest.mark.parametrize("spelling", list(RELATIVE_PATHS))
def test_a_git_or_ssh_keygen_planted_in_the_repository_never_runs(
    repo: Path, cli: Cli, simulator: Any, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    alice = make_key(repo.parent / "keys", "ed25519", "alice@example.com")
    signers = allowed_signers(repo.parent / "signers", alice.allowed_line())
    marker = repo.parent / "planted-ran"
    (repo / "tools").mkdir()
    for folder in (repo, repo / "tools"):
        for name in ("git", "ssh-keygen"):
            _plant(folder, name, marker)
    monkeypatch.setenv("PATH", RELATIVE_PATHS[spelling](os.environ["PATH"]))
    ask = ["run", "-p", "x", "--endpoint", simulator.base_url, "-c", "docs/spec.md"]
    r = cli(*ask, "--sign", "--signing-key", str(alice.private))
    assert r.code == 0, r.err
    v = cli("verify", "--allowed-signers", str(signers))
    assert v.code == 0, v.err
    assert cli("run", "-p", "x", "--dry-run", "-c", "src").code == 0
    assert not marker.exists(), marker.read_text()


@needs_openssh
def test_ssh_keygen_only_in_a_relative_path_entry_is_not_found_naming_the_path(
    repo: Path, cli: Cli, simulator: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    alice = make_key(tmp_path / "keys", "ed25519", "alice@example.com")
    marker = tmp_path / "planted-ran"
    _plant(repo, "ssh-keygen", marker)
    real_git = shutil.which("git")
    assert real_git is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(real_git)
    path = f".{os.pathsep}{bin_dir}"
    monkeypatch.setenv("PATH", path)
    ask = ["run", "-p", "x", "--endpoint", simulator.base_url, "-c", "docs/spec.md"]
    r = cli(*ask, "--sign", "--signing-key", str(alice.private))
    assert r.code == 2
    assert r.err.strip() == (
        f"deepseek-review: error: ssh-keygen not found on PATH ({path}; only absolute "
        "entries are searched): signing needs OpenSSH's ssh-keygen"
    )
    assert simulator.chat_requests() == []
    assert not marker.exists()


def _path_without_git(tmp_path: Path) -> str:
    """``.`` and an absolute folder holding only ``sh`` (what a planted script runs with)."""
    bin_dir = tmp_path / "nogit"
    bin_dir.mkdir()
    sh = shutil.which("sh")
    assert sh is not None
    (bin_dir / "sh").symlink_to(sh)
    return f".{os.pathsep}{bin_dir}"


def test_git_only_in_a_relative_path_entry_is_not_found_and_a_repository_is_refused(
    repo: Path, cli: Cli, simulator: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Not gathered without git, which would not know its ignore rules (an ignored .env)."""
    (repo / "build").mkdir()
    (repo / "build" / "secret.txt").write_text("ignored\n", encoding="utf-8")
    marker = tmp_path / "planted-ran"
    _plant(repo, "git", marker)
    path = _path_without_git(tmp_path)
    monkeypatch.setenv("PATH", path)
    forget_git_facts()
    r = cli("run", "-p", "x", "--endpoint", simulator.base_url, "-c", ".")
    assert r.code == 2
    assert r.err.strip() == (
        f"deepseek-review: error: git not found on PATH ({path}; only absolute entries are "
        f"searched): {repo} is in a git repository (its ignore rules need git)"
    )
    assert simulator.chat_requests() == []
    assert not marker.exists()


def test_a_folder_outside_any_repository_is_still_reviewed_without_git(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.md").write_text("# Notes\n", encoding="utf-8")
    monkeypatch.chdir(plain)
    monkeypatch.setenv("PATH", _path_without_git(tmp_path))
    forget_git_facts()
    assert [f["path"] for f in dry(cli, "-c", "notes.md")["context_files"]] == ["notes.md"]


# --------------------------------------------------------------------------- noise (item 8)


def test_a_change_cannot_mark_its_own_file_generated(repo: Path, cli: Cli) -> None:
    a = base_commit(repo)
    b = commit(repo, "pr", {".gitattributes": "src/pkg/a.py linguist-generated\n",
                            "src/pkg/a.py": "A = 1\n"})  # fmt: skip
    assert dry(cli, "--diff", f"{a}..{b}")["git"]["diff"]["shown"] == [
        ".gitattributes",
        "src/pkg/a.py",
    ]


def test_a_nested_gitattributes_the_change_adds_marks_nothing(repo: Path, cli: Cli) -> None:
    a = base_commit(repo)
    b = commit(repo, "pr", {"src/pkg/.gitattributes": "*.py linguist-generated=true\n",
                            "src/pkg/a.py": "A = 1\n", "src/pkg/mean.py": "M = 1\n"})  # fmt: skip
    shown = dry(cli, "--diff", f"{a}..{b}")["git"]["diff"]["shown"]
    assert shown == ["src/pkg/.gitattributes", "src/pkg/a.py", "src/pkg/mean.py"]


def test_a_change_that_widens_the_bases_attributes_hides_only_what_the_base_marked(
    repo: Path, cli: Cli
) -> None:
    (repo / ".gitattributes").write_text("gen/* linguist-generated\n", encoding="utf-8")
    a = base_commit(repo)
    wider = "gen/* linguist-generated\nsrc/** linguist-generated\n"
    b = commit(repo, "pr", {".gitattributes": wider, "gen/api.py": "X = 1\n",
                            "src/pkg/a.py": "A = 1\n"})  # fmt: skip
    plan = dry(cli, "--diff", a)
    assert plan["git"]["diff"]["shown"] == [".gitattributes", "src/pkg/a.py"]
    assert b == git(repo, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("where", [".gitattributes", "gen/.gitattributes"])
def test_a_file_the_base_marks_generated_stays_out_when_the_change_unmarks_it(
    repo: Path, cli: Cli, where: str
) -> None:
    line = "gen/* linguist-generated\n" if where == ".gitattributes" else "* linguist-generated\n"
    (repo / where).parent.mkdir(exist_ok=True)
    (repo / where).write_text(line, encoding="utf-8")
    a = base_commit(repo)
    b = commit(repo, "pr", {where: None, "gen/api.py": "X = 1\n", "src/pkg/a.py": "A\n"})
    plan = dry(cli, "--diff", f"{a}..{b}")
    assert "gen/api.py" not in plan["git"]["diff"]["shown"]
    assert "src/pkg/a.py" in plan["git"]["diff"]["shown"]


def test_a_staged_gitattributes_cannot_mark_the_staged_change(repo: Path, cli: Cli) -> None:
    base_commit(repo)
    (repo / ".gitattributes").write_text("*.py linguist-generated\n", encoding="utf-8")
    (repo / "src" / "pkg" / "a.py").write_text("A = 1\n", encoding="utf-8")
    git(repo, "add", "-A")
    assert dry(cli, "--staged")["git"]["diff"]["shown"] == [".gitattributes", "src/pkg/a.py"]


@pytest.mark.parametrize(
    ("where", "line"),
    [(".gitattributes", "src/pkg/a.py -diff\n"), ("src/pkg/.gitattributes", "*.py binary\n")],
    ids=["-diff at the top", "binary nested"],
)
def test_a_file_the_change_itself_marks_binary_is_kept_and_sent_whole(
    repo: Path, cli: Cli, where: str, line: str
) -> None:
    a = base_commit(repo)
    b = commit(repo, "pr", {where: line, "src/pkg/a.py": "import os\nos.system('x')\n"})
    r = cli("run", "-p", "x", "--dry-run", "--json", "--diff", f"{a}..{b}")
    assert r.code == 0, r.err
    plan = r.json()
    assert "src/pkg/a.py" in plan["git"]["diff"]["shown"]
    assert [f["path"] for f in plan["context_files"]] == ["src/pkg/a.py"]
    assert "src/pkg/a.py: binary only by the change's .gitattributes; sent whole" in r.err


def test_a_review_that_sent_a_file_whole_because_the_change_marked_it_binary_verifies(
    repo: Path, cli: Cli, simulator: Any
) -> None:
    (repo / ".gitignore").write_text("reviews/\n", encoding="utf-8")
    a = base_commit(repo)
    commit(repo, "pr", {".gitattributes": "*.py -diff\n", "src/pkg/a.py": "A = 1\n"})
    r = cli("run", "-p", "x", "--diff", f"{a}..HEAD", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    assert b"A = 1" in simulator.chat_requests()[0].body
    v = cli("verify")
    assert v.code == 0, v.out + v.err


def test_files_binary_at_the_base_or_by_content_stay_out_when_the_change_edits_attributes(
    repo: Path, cli: Cli
) -> None:
    (repo / ".gitattributes").write_text("*.dat -diff\n", encoding="utf-8")
    (repo / "table.dat").write_text("1 2 3\n", encoding="utf-8")
    a = base_commit(repo)
    b = commit(repo, "pr", {".gitattributes": "*.dat -diff\n*.md text\n",
                            "table.dat": "4 5 6\n", "logo.png": b"\x89PNG\0\0\1",
                            "src/pkg/a.py": "A = 1\n"})  # fmt: skip
    plan = dry(cli, "--diff", f"{a}..{b}")
    assert plan["git"]["diff"]["shown"] == [".gitattributes", "src/pkg/a.py"]
    assert plan["context_files"] == []


# --------------------------------------------------------------------------- work tree (item 14)


def _outside(repo: Path) -> str:
    secret = repo.parent / "outside"
    secret.mkdir(exist_ok=True)
    (secret / "id_rsa.txt").write_text("not for the model\n", encoding="utf-8")
    return str(secret)


MOVES: dict[str, Callable[[Path], list[str]]] = {
    "core.worktree a parent": lambda repo: ["core.worktree", str(repo.parent)],
    "core.worktree relative parent": lambda repo: ["core.worktree", "../.."],
    "core.worktree the root": lambda repo: ["core.worktree", "/"],
    "core.worktree a sibling": lambda repo: ["core.worktree", _outside(repo)],
    "core.bare": lambda repo: ["core.bare", "true"],
}


@pytest.mark.parametrize("move", list(MOVES))
def test_a_work_tree_moved_by_the_repository_config_is_refused(
    repo: Path, cli: Cli, simulator: Any, move: str
) -> None:
    base_commit(repo)
    _outside(repo)
    git(repo, "config", *MOVES[move](repo))
    forget_git_facts()
    r = cli("run", "-p", "x", "--endpoint", simulator.base_url, "-c", ".")
    assert r.code == 2, r.err
    assert r.err.count("\n") <= 2  # the error and its hint
    assert "refused" in r.err and ("core.worktree" in r.err)
    assert simulator.chat_requests() == []


def test_a_linked_worktree_is_reviewed_from_its_own_folder(
    repo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    base_commit(repo)
    linked = repo.parent / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    monkeypatch.chdir(linked)
    forget_git_facts()
    plan = dry(cli, "-c", "docs/spec.md")
    assert [f["path"] for f in plan["context_files"]] == ["docs/spec.md"]
    assert plan["git"] is not None  # pinned: git knew the repository


def test_the_operators_git_dir_and_work_tree_are_theirs_to_set(
    repo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    base_commit(repo)
    moved = repo.parent / "gitdir"
    (repo / ".git").rename(moved)
    monkeypatch.setenv("GIT_DIR", str(moved))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo))
    forget_git_facts()
    plan = dry(cli, "-c", "docs/spec.md")
    assert [f["path"] for f in plan["context_files"]] == ["docs/spec.md"]
    assert plan["git"] is not None  # pinned: git knew the repository
