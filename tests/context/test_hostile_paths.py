"""Paths the repository names cannot reach git's data or what git ignores, nor write there.

The pull request's files (a manifest, the repository's config file) are hostile; the command
line is the operator's. No path-valued option (``prompt_file``, ``template_file``,
``output_dir``, ``context``), from any source, may name a place in git's data however it is
spelled (``.GIT``, ``a/../.git``, a symlink to ``.git``, a submodule's gitfile, the git dir
kept elsewhere): the checkout token lives in ``.git/config``, and a file written into
``.git/hooks`` or ``.git/refs/heads`` is a hook or a broken ref. A manifest may not name a file
git ignores (``.npmrc``, ``secrets/kubeconfig``); the operator still may, on the command line.
Every refusal is one line naming the option and the file, exit 3, nothing sent or written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator
from tests.support.cli import files_under
from tests.support.git import git

Cli = Callable[..., Any]

#: Planted secrets: a fake CI checkout token in .git/config, fake tokens in ignored files.
TOKEN = "ghs_FAKEcheckoutTOKEN0do0not0leak0C3"
NPM_SECRET = "npmFAKEsecret0do0not0leak0D4"
KUBE_SECRET = "kubeFAKEsecret0do0not0leak0E5"

TEMPLATE = "<!-- user -->\n{{ prompt }}\n{{ context }}\n"


@pytest.fixture
def planted(repo: Path) -> Path:
    """The repo fixture with CI's token in .git/config, an ignored .npmrc and secrets/ folder
    (a kubeconfig, a prompt and a template in it), a committed symlink to .git, a prompt and a
    template of the repository's own, and a submodule-like folder whose .git is a gitfile."""
    git(repo, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {TOKEN}")
    (repo / ".npmrc").write_text(f"//registry.npmjs.org/:_authToken={NPM_SECRET}\n")
    (repo / "secrets").mkdir()
    (repo / "secrets" / "kubeconfig").write_text(f"token: {KUBE_SECRET}\n")
    (repo / "secrets" / "prompt.md").write_text(f"Check {KUBE_SECRET}.\n")
    (repo / "secrets" / "tpl.md").write_text(TEMPLATE + KUBE_SECRET + "\n")
    with (repo / ".gitignore").open("a", encoding="utf-8") as fh:
        fh.write(".npmrc\nsecrets/\n")
    (repo / "docs" / "gitlink").symlink_to("../.git", target_is_directory=True)
    (repo / "docs" / "npmrc").symlink_to("../.npmrc")
    (repo / "prompt.md").write_text("Check the mean.\n")
    (repo / "tpl.md").write_text(TEMPLATE)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "x")
    (repo / "sub").mkdir()
    (repo / "sub" / ".git").write_text("gitdir: ../.git\n")  # git adds no gitfile
    return repo


def assert_refused_once(r: Any, simulator: Simulator, root: Path, *names: str) -> None:
    """Exit 3, one error line naming each of ``names``, nothing sent, nothing written, no
    planted secret anywhere in the output."""
    assert r.code == 3, (r.code, r.err)
    lines = r.err.strip().splitlines()
    errors = [ln for ln in lines if ln.startswith("deepseek-review: error: ")]
    assert len(errors) == 1, r.err
    for name in names:
        assert name in errors[0], (name, r.err)
    assert "Traceback" not in r.err
    assert simulator.chat_requests() == []
    for folder in ("reviews", "out", ".git/hooks", ".git/refs/heads"):
        assert [f for f in files_under(root / folder) if f.endswith((".md", ".json"))] == []
    for secret in (TOKEN, NPM_SECRET, KUBE_SECRET):
        assert secret not in r.out + r.err


def manifest(root: Path, defaults: Mapping[str, Any] | None = None, **keys: Any) -> Path:
    """A one-entry TOML manifest at the root; ``defaults`` its ``[defaults]`` table."""
    lines = []
    if defaults:
        lines.append("[defaults]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in defaults.items()]
    lines += ["[[review]]", 'topic = "t"']
    keys.setdefault("context", "docs/spec.md")
    if "prompt_file" not in keys:
        keys.setdefault("prompt", "Check it.")
    lines += [f"{k} = {json.dumps(v)}" for k, v in keys.items()]
    path = root / "reviews.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def batch(cli: Cli, simulator: Simulator, path: Path, *extra: str) -> Any:
    return cli("batch", path.name, "--endpoint", simulator.base_url, "--retry-wait", "0.01", *extra)


def run(cli: Cli, simulator: Simulator, *extra: str) -> Any:
    args = ("run", "--endpoint", simulator.base_url, "--retry-wait", "0.01", *extra)
    return cli(*args)


#: Spellings of git's data: as named, in another case, through ``..``, through a symlink to
#: ``.git``, a submodule's gitfile.
GIT_SPELLINGS = [
    ".git/config",
    ".GIT/config",
    "./.git/config",
    "docs/../.git/config",
    "docs/gitlink/config",
    "sub/.git",
]
GIT_FOLDERS = [".git/hooks", ".git/refs/heads", ".Git/hooks", "docs/../.git", "docs/gitlink/hooks"]


# --------------------------------------------------------------------------- git's data


@pytest.mark.parametrize("spelled", GIT_SPELLINGS)
def test_a_manifest_prompt_file_in_gits_data_is_refused(planted, simulator, cli, spelled):
    r = batch(cli, simulator, manifest(planted, prompt_file=spelled))
    shown = f"entry 1 (line 3, topic 't'): prompt_file {spelled}"
    assert_refused_once(r, simulator, planted, shown, "git's own data", "reviews.toml")


@pytest.mark.parametrize("spelled", GIT_SPELLINGS)
def test_a_manifest_template_file_in_gits_data_is_refused(planted, simulator, cli, spelled):
    r = batch(cli, simulator, manifest(planted, template_file=spelled))
    assert_refused_once(r, simulator, planted, f"template_file {spelled}", "git's own data")


@pytest.mark.parametrize("spelled", GIT_SPELLINGS)
def test_a_manifest_defaults_template_file_in_gits_data_is_refused(
    planted, simulator, cli, spelled
):
    r = batch(cli, simulator, manifest(planted, defaults={"template_file": spelled}))
    assert_refused_once(r, simulator, planted, f"template_file {spelled}", "git's own data")


@pytest.mark.parametrize("spelled", GIT_SPELLINGS)
def test_manifest_context_in_gits_data_is_refused(planted, simulator, cli, spelled):
    r = batch(cli, simulator, manifest(planted, context=[spelled]))
    assert_refused_once(r, simulator, planted, spelled, "git's own data")


@pytest.mark.parametrize("spelled", GIT_FOLDERS)
def test_a_manifest_output_dir_in_gits_data_is_refused(planted, simulator, cli, spelled):
    r = batch(cli, simulator, manifest(planted, output_dir=spelled))
    assert_refused_once(r, simulator, planted, f"output_dir {spelled}", "git's own data")


@pytest.mark.parametrize("spelled", GIT_FOLDERS)
def test_a_manifest_defaults_output_dir_in_gits_data_is_refused(planted, simulator, cli, spelled):
    r = batch(cli, simulator, manifest(planted, defaults={"output_dir": spelled}))
    assert_refused_once(r, simulator, planted, f"output_dir {spelled}", "git's own data")


@pytest.mark.parametrize("spelled", GIT_FOLDERS)
@pytest.mark.parametrize("command", ["run", "batch"])
def test_the_repository_config_output_dir_in_gits_data_is_refused(
    planted, simulator, cli, spelled, command
):
    (planted / ".deepseek-review.toml").write_text(f"output_dir = {json.dumps(spelled)}\n")
    if command == "run":
        r = run(cli, simulator, "-c", "docs/spec.md", "-p", "Check.")
    else:
        r = batch(cli, simulator, manifest(planted))
    assert_refused_once(r, simulator, planted, spelled, "git's own data")


@pytest.mark.parametrize("spelled", GIT_FOLDERS)
def test_the_command_lines_output_dir_in_gits_data_is_refused(planted, simulator, cli, spelled):
    r = run(cli, simulator, "-c", "docs/spec.md", "-p", "Check.", "--output-dir", spelled)
    assert_refused_once(r, simulator, planted, f"--output-dir {spelled}", "git's own data")


def test_batchs_output_dir_flag_in_gits_data_is_refused(planted, simulator, cli):
    r = batch(cli, simulator, manifest(planted), "--output-dir", ".git/refs/heads")
    assert_refused_once(r, simulator, planted, "--output-dir .git/refs/heads", "git's own data")
    assert git(planted, "for-each-ref").count("refs/heads/") == 1


@pytest.mark.parametrize("spelled", GIT_SPELLINGS)
def test_the_command_lines_prompt_file_in_gits_data_is_refused(planted, simulator, cli, spelled):
    r = run(cli, simulator, "-c", "docs/spec.md", "--prompt-file", spelled)
    assert_refused_once(r, simulator, planted, f"--prompt-file {Path(spelled)}", "git's own data")


@pytest.mark.parametrize("spelled", GIT_SPELLINGS)
def test_the_command_lines_template_file_in_gits_data_is_refused(planted, simulator, cli, spelled):
    r = run(cli, simulator, "-c", "docs/spec.md", "-p", "Check.", "--template-file", spelled)
    shown = f"--template-file {Path(spelled)}"
    assert_refused_once(r, simulator, planted, shown, "git's own data")


@pytest.mark.parametrize("spelled", GIT_SPELLINGS)
def test_the_command_lines_context_in_gits_data_is_refused(planted, simulator, cli, spelled):
    r = run(cli, simulator, "-p", "Check.", "-c", spelled)
    assert_refused_once(r, simulator, planted, spelled, "git's own data")


def test_a_git_dir_kept_elsewhere_in_the_tree_is_refused(repo, simulator, cli):
    """``git init --separate-git-dir`` can put the git dir anywhere, under any name."""
    git(repo, "init", "-q", "--separate-git-dir", str(repo / "gitdata"))
    git(repo, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {TOKEN}")
    r = batch(cli, simulator, manifest(repo, prompt_file="gitdata/config"))
    assert_refused_once(r, simulator, repo, "prompt_file gitdata/config", "gitdata/")
    r = run(cli, simulator, "-c", "docs/spec.md", "--prompt-file", "gitdata/config")
    assert_refused_once(r, simulator, repo, "--prompt-file gitdata/config", "gitdata/")


def test_a_git_dir_outside_the_work_tree_is_refused_on_the_command_line(
    tmp_path, repo, simulator, cli
):
    """A git dir out of the tree (another name, no ``.git`` in its path) is still git's."""
    store = tmp_path / "store"
    git(repo, "init", "-q", "--separate-git-dir", str(store))
    git(repo, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {TOKEN}")
    r = run(cli, simulator, "-c", "docs/spec.md", "--prompt-file", str(store / "config"))
    assert_refused_once(r, simulator, repo, f"--prompt-file {store / 'config'}", "git's own data")


def test_a_linked_worktrees_git_dir_is_refused_on_the_command_line(repo, simulator, cli, tmp_path):
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "x",
        "--allow-empty")  # fmt: skip
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    os.chdir(linked)
    gitdir = git(linked, "rev-parse", "--absolute-git-dir").strip()
    r = run(cli, simulator, "-c", "docs/spec.md", "--prompt-file", f"{gitdir}/HEAD")
    assert_refused_once(r, simulator, linked, "--prompt-file", "git's own data")


# --------------------------------------------------------------------------- ignored files


@pytest.mark.parametrize(
    "spelled",
    [".npmrc", "secrets/kubeconfig", "./secrets/../.npmrc", ".npmrc#L1", "secrets/kubeconfig#L1-2"],
)
def test_a_manifest_may_not_name_an_ignored_context_file(planted, simulator, cli, spelled):
    r = batch(cli, simulator, manifest(planted, context=["docs/spec.md", spelled]))
    assert_refused_once(r, simulator, planted, f"context {spelled}", "git ignores it", "entry 1")


def test_a_manifests_defaults_may_not_name_an_ignored_context_file(planted, simulator, cli):
    path = manifest(planted, defaults={"context": "secrets/kubeconfig"})
    text = path.read_text().replace('context = "docs/spec.md"\n', "")
    path.write_text(text)
    r = batch(cli, simulator, path)
    assert_refused_once(r, simulator, planted, "context secrets/kubeconfig", "git ignores it")


@pytest.mark.parametrize("spelled", ["secrets/prompt.md", "secrets/../secrets/prompt.md"])
def test_a_manifest_may_not_name_an_ignored_prompt_file(planted, simulator, cli, spelled):
    r = batch(cli, simulator, manifest(planted, prompt_file=spelled))
    assert_refused_once(r, simulator, planted, f"prompt_file {spelled}", "git ignores it")


def test_a_manifest_may_not_name_a_symlink_to_an_ignored_prompt_file(planted, simulator, cli):
    r = batch(cli, simulator, manifest(planted, prompt_file="docs/npmrc"))
    assert_refused_once(r, simulator, planted, "prompt_file docs/npmrc", "git ignores it")


@pytest.mark.parametrize("where", ["entry", "defaults"])
def test_a_manifest_may_not_name_an_ignored_template_file(planted, simulator, cli, where):
    keys: dict[str, Any] = {"template_file": "secrets/tpl.md"}
    path = manifest(planted, **keys) if where == "entry" else manifest(planted, defaults=keys)
    r = batch(cli, simulator, path)
    assert_refused_once(r, simulator, planted, "template_file secrets/tpl.md", "git ignores it")


def test_a_tracked_file_a_gitignore_pattern_matches_is_not_ignored(planted, simulator, cli):
    """git ignores only untracked files: a committed one is part of the repository."""
    (planted / "kept.log").write_text("committed log\n")
    git(planted, "add", "-f", "kept.log")
    r = batch(cli, simulator, manifest(planted, context=["kept.log"]), "--dry-run")
    assert r.code == 0, r.err


def test_in_an_ignored_folder_holding_tracked_files_only_the_untracked_are_ignored(
    planted, simulator, cli
):
    (planted / "build").mkdir()
    (planted / "build" / "kept.md").write_text("committed\n")
    (planted / "build" / "made.md").write_text(f"made {NPM_SECRET}\n")
    git(planted, "add", "-f", "build/kept.md")  # the fixture's .gitignore has build/
    r = batch(cli, simulator, manifest(planted, context=["build/kept.md"]), "--dry-run")
    assert r.code == 0, r.err
    r = batch(cli, simulator, manifest(planted, context=["build/kept.md", "build/made.md"]))
    assert_refused_once(r, simulator, planted, "context build/made.md", "git ignores it")


def test_a_manifest_folder_or_glob_leaves_ignored_files_out(planted, simulator, cli):
    r = batch(cli, simulator, manifest(planted, context=["docs", "*.md"]))
    assert r.code == 0, r.err
    (request,) = simulator.chat_requests()
    for secret in (TOKEN, NPM_SECRET, KUBE_SECRET):
        assert secret.encode() not in request.body


def test_the_operator_may_still_name_ignored_files_on_the_command_line(planted, simulator, cli):
    r = run(cli, simulator, "-c", ".npmrc", "-c", "secrets/kubeconfig", "--dry-run",
            "--prompt-file", "secrets/prompt.md", "--template-file", "secrets/tpl.md",
            "--json")  # fmt: skip
    assert r.code == 0, r.err
    assert {f["path"] for f in r.json()["context_files"]} == {".npmrc", "secrets/kubeconfig"}


# --------------------------------------------------------------------------- modes


@pytest.fixture
def umask_000() -> Any:
    """The process's umask 000 for the test (CI images and containers often run so)."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def modes_below(root: Path, top: str) -> dict[str, int]:
    """Permission bits of ``top`` and of every folder and file below it (relative names)."""
    found = {top: (root / top).stat().st_mode & 0o777}
    for path in (root / top).rglob("*"):
        found[path.relative_to(root).as_posix()] = path.stat().st_mode & 0o777
    return found


def test_folders_are_created_0755_under_umask_000(repo, simulator, cli, umask_000):
    r = run(cli, simulator, "-c", "docs/spec.md", "-p", "Check.", "--output-dir", "out/a/b")
    assert r.code == 0, r.err
    modes = modes_below(repo, "out")
    assert {modes[d] for d in ("out", "out/a", "out/a/b")} == {0o755}
    files = {name: mode for name, mode in modes.items() if name.count("/") == 3}
    assert files, modes
    assert all(mode in (0o644, 0o600) for mode in files.values()), files
    assert {mode for name, mode in files.items() if name.endswith(".request.json")} == {0o600}


def test_batch_folders_are_created_0755_under_umask_000(repo, simulator, cli, umask_000):
    r = batch(cli, simulator, manifest(repo, output_dir="deep/er"))
    assert r.code == 0, r.err
    assert modes_below(repo, "deep")["deep"] == 0o755
    assert modes_below(repo, "deep")["deep/er"] == 0o755


def test_folders_never_get_more_than_the_umask_allows(tmp_path):
    from deepseek_review.records.storage import ensure_dir

    old = os.umask(0o077)
    try:
        ensure_dir(tmp_path / "x" / "y", shown="x/y")
    finally:
        os.umask(old)
    assert modes_below(tmp_path, "x") == {"x": 0o700, "x/y": 0o700}


def test_an_existing_folders_mode_is_left_alone(tmp_path, umask_000):
    from deepseek_review.records.storage import ensure_dir

    (tmp_path / "shared").mkdir(mode=0o775)
    ensure_dir(tmp_path / "shared" / "new", shown="shared/new")
    assert modes_below(tmp_path, "shared") == {"shared": 0o775, "shared/new": 0o755}


@pytest.mark.parametrize("spelled", [".git/hooks/pre-push", ".GIT/report.json", "docs/gitlink/x"])
def test_the_batch_report_is_never_written_into_gits_data(planted, simulator, cli, spelled):
    r = batch(cli, simulator, manifest(planted), "--report", spelled)
    assert_refused_once(r, simulator, planted, f"--report {spelled}", "git's own data")
    assert not (planted / ".git" / "hooks" / "pre-push").exists()


# --------------------------------------------------------------------------- sizes

GIB = 1 << 30
#: Peak memory a command may reach on a 1 GiB file it refuses: a Python process with the
#: package loaded stays near 50 MB; reading the file would take a gigabyte.
RSS_BOUND_KB = 200 * 1024

#: Runs the command in a child and prints the child's peak RSS (KiB) last on stderr.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:])\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(f'peak-rss-kib {peak}', file=sys.stderr)\n"
    "sys.exit(done.returncode)\n"
)


def measured(root: Path, *args: str) -> tuple[int, str, int]:
    """Exit code, stderr and peak RSS (KiB) of ``deepseek-review args`` in its own process."""
    import subprocess
    import sys

    argv = [sys.executable, "-c", _MEASURE, sys.executable, "-m", "deepseek_review", *args]
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
    *lines, last = done.stderr.strip().splitlines()
    assert last.startswith("peak-rss-kib "), done.stderr
    return done.returncode, "\n".join(lines), int(last.split()[1])


def sparse(path: Path, size: int = GIB) -> None:
    """``path`` made ``size`` bytes long without writing them (a hole: no disk used)."""
    with path.open("r+b" if path.exists() else "wb") as fh:
        fh.truncate(size)


@pytest.fixture
def reviewed(repo: Path, simulator: Simulator, cli: Cli) -> dict[str, Path]:
    """A review of the repo fixture's spec: its answer, receipt and record."""
    r = run(cli, simulator, "-c", "docs/spec.md", "-p", "Check.", "--json")
    assert r.code == 0, r.err
    (segment,) = r.json()["segments"]
    return {kind: repo / segment[f"{kind}_path"] for kind in ("answer", "receipt", "record")}


@pytest.mark.parametrize("kind", ["receipt", "record", "answer"])
@pytest.mark.parametrize("command", ["verify", "findings"])
def test_a_sparse_gigabyte_review_file_is_refused_unread(repo, reviewed, kind, command):
    sparse(reviewed[kind])
    receipt = reviewed["receipt"].relative_to(repo).as_posix()
    args = ["verify"] if command == "verify" else ["findings", receipt, "--format", "json"]
    code, err, peak = measured(repo, *args)
    assert code != 0, err
    assert "Traceback" not in err
    assert reviewed[kind].name in err, err
    if kind == "receipt" or command == "verify":
        assert "over the 67108864 a review file may hold" in err, err
    assert peak < RSS_BOUND_KB, f"peak RSS {peak} KiB"


def test_a_planted_gigabyte_receipt_is_refused_unread(repo, reviewed):
    planted = reviewed["receipt"].with_name("zz_deepseek_m_20990101T000000Z.receipt.json")
    sparse(planted)
    code, err, peak = measured(repo, "verify")
    assert code == 9, err
    assert f"{planted.name}: cannot read" in err and "over the 67108864" in err, err
    assert peak < RSS_BOUND_KB, f"peak RSS {peak} KiB"


def test_a_sparse_gigabyte_manifest_is_refused_unread(repo, simulator):
    sparse(repo / "reviews.toml")
    code, err, peak = measured(repo, "batch", "reviews.toml", "--endpoint", simulator.base_url)
    assert code == 3, err
    assert "manifest reviews.toml: cannot read" in err and "over the" in err, err
    assert peak < RSS_BOUND_KB, f"peak RSS {peak} KiB"
    assert simulator.chat_requests() == []


@pytest.mark.parametrize("name", [".deepseek-review.toml", "pyproject.toml"])
def test_a_sparse_gigabyte_config_file_is_refused_unread(repo, simulator, name):
    sparse(repo / name)
    args = ["run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", simulator.base_url]
    code, err, peak = measured(repo, *args)
    assert code == 2, err
    assert f"{name}: cannot read" in err and "over the" in err, err
    assert peak < RSS_BOUND_KB, f"peak RSS {peak} KiB"
    assert simulator.chat_requests() == []


def test_a_sparse_gigabyte_template_file_is_refused_unread(repo, simulator):
    sparse(repo / "tpl.md")
    args = ["run", "-c", "docs/spec.md", "-p", "Check.", "--template-file", "tpl.md"]
    code, err, peak = measured(repo, *args, "--endpoint", simulator.base_url)
    assert code == 3, err
    assert "template file tpl.md: cannot read" in err, err
    assert peak < RSS_BOUND_KB, f"peak RSS {peak} KiB"


def test_continue_writes_nothing_into_gits_data(repo, make_simulator, cli):
    """A chain whose folder leads into ``.git`` (here through a symlink) is not continued."""
    sim = make_simulator(answer_words=400)
    r = run(cli, sim, "-c", "docs/spec.md", "-p", "Check.", "--output-dir", "rv",
            "--max-tokens", "20", "--max-continuations", "0", "--json")  # fmt: skip
    assert r.code == 4, r.err
    receipt = r.json()["segments"][0]["receipt_path"]
    (repo / "rv").rename(repo / ".git" / "rv")
    (repo / "rv").symlink_to(".git/rv", target_is_directory=True)
    before = sorted(os.listdir(repo / ".git" / "rv"))
    sent = len(sim.chat_requests())
    r = cli("continue", receipt, "--endpoint", sim.base_url)
    assert r.code == 3, r.err
    assert "its folder rv: inside .git/ (git's own data" in r.err, r.err
    assert len(sim.chat_requests()) == sent
    assert sorted(os.listdir(repo / ".git" / "rv")) == before


def test_an_endless_manifest_stream_is_refused_at_the_limit(repo, simulator):
    args = ["batch", "/dev/zero", "--format", "toml", "--endpoint", simulator.base_url]
    code, err, peak = measured(repo, *args)
    assert code == 3, err
    assert "manifest /dev/zero: cannot read" in err and "over the 67108864" in err, err
    assert peak < RSS_BOUND_KB, f"peak RSS {peak} KiB"
