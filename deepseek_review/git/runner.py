"""The repository root, and turning user paths into safe repo-relative POSIX paths.

Receipts name files relative to the repository root, so every path the tool reads or writes
goes through :func:`resolve_inside`, which refuses anything that would land outside the root
(absolute paths elsewhere, ``..``, symlinks that lead out).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from deepseek_review.errors import ConfigError, InputError
from deepseek_review.git.programs import find_program, require_program
from deepseek_review.options.table import name_of
from deepseek_review.util.path_cache import settled
from deepseek_review.util.textsafe import is_unsafe_char

#: Forced on every git command. The repository under review is untrusted, and so is its
#: ``.git/config``: nothing in it may make git run a program. ``ls-files`` and
#: ``check-ignore`` run ``core.fsmonitor``; no command here runs hooks, a pager, a diff
#: driver or a transport, but they are switched off too so that a future command cannot
#: (a ``git diff`` must also pass ``--no-ext-diff --no-textconv``; filters:
#: :data:`FILTER_FREE_COMMANDS`).
#: ``safe.bareRepository`` keeps git from adopting a bare repository committed in the tree.
SAFE_GIT_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.sshCommand=false",
    "protocol.allow=never",
    "safe.bareRepository=explicit",
)

#: The environment git runs in: the operator's own (``GIT_DIR``, their global and system
#: config are theirs to set), with no pager, no prompt, no lazy fetch, and English messages
#: (a refusal is recognised by its words).
_GIT_ENV = {
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_LAZY_FETCH": "1",
    "LC_ALL": "C",
}

#: Variables that would reshape a patch past its flags: ``GIT_DIFF_OPTS`` overrides ``-U``
#: (a diff's bytes are a function of the commits and the recorded options only).
_DROPPED_ENV = frozenset({"GIT_DIFF_OPTS", "GIT_EXTERNAL_DIFF"})

_DUBIOUS_RE = re.compile(rb"dubious ownership in repository at '([^'\n]*)'")

#: The subcommands that never run a filter program: they read objects, attributes, config
#: or the index's names, and neither hash a work-tree file nor write the index (writing it
#: re-checks "racily clean" entries through the clean filter: ``write-tree`` does). Every
#: other subcommand, including any added later, runs with each filter driver the
#: repository's own config defines switched off (:func:`git_command`); the operator's
#: (global, system, ``git -c``) stay, so git-lfs keeps working. tests/git/test_git_hardening.py
#: holds each of these to it.
FILTER_FREE_COMMANDS = frozenset(
    {"rev-parse", "cat-file", "diff-tree", "ls-tree", "merge-base", "check-attr", "config",
     "ls-files"}
)  # fmt: skip
#: Flags that make a filter-free subcommand run filters or textconv after all.
_FILTERING_FLAGS = frozenset(
    {"--filters", "--textconv", "--modified", "--deleted", "-m", "-d", "--eol"}
)
_TRUSTED_SCOPES = frozenset({"global", "system", "command"})
#: What each of the repository's filter drivers is set to: no program, not required.
_FILTER_OFF = ("clean=", "smudge=", "process=", "required=false")


def subcommand(args: Sequence[str]) -> str | None:
    """The git subcommand ``args`` run (after any ``-c NAME=VALUE``); None when none."""
    i = 0
    while i < len(args) and args[i] == "-c":
        i += 2
    return args[i] if i < len(args) else None


def runs_filters(args: Sequence[str]) -> bool:
    """Whether ``git ARGS`` may run a filter program (so the repository's are switched off)."""
    sub = subcommand(args)
    return sub not in FILTER_FREE_COMMANDS or not _FILTERING_FLAGS.isdisjoint(args)


def git_executable() -> str | None:
    """git as :func:`git.programs.find_program` finds it (absolute ``PATH`` entries only)."""
    return find_program("git")


def git_env() -> dict[str, str]:
    """The environment every git command runs in (:data:`_GIT_ENV`, less :data:`_DROPPED_ENV`)."""
    return {**{k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}, **_GIT_ENV}


def _run_git(
    git: str,
    cwd: Path,
    args: list[str],
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(
            [git, "--no-pager", *args],
            cwd=cwd,
            capture_output=True,
            check=False,
            env={**git_env(), **env} if env else git_env(),
            input=stdin or b"",  # a pipe closed at once when the command reads nothing
        )
    except OSError:
        return None


def _repository_filter_drivers(git: str, cwd: Path, config: list[str]) -> list[str] | None:
    """``filter.<driver>`` of every filter the repository's own config defines; None when
    git cannot say. One that ``-c`` cannot switch off (a ``=`` in its name) is a
    :class:`ConfigError`: the command is refused, never run with it on."""
    query = ["config", "-z", "--show-scope", "--name-only", "--get-regexp", "^filter[.]"]
    found = _run_git(git, cwd, [*config, *query])
    if found is None or found.returncode not in (0, 1):  # 1: none configured at all
        return None
    items = os.fsdecode(found.stdout).split("\0")
    keys = [
        k for scope, k in zip(items[::2], items[1::2], strict=False) if scope not in _TRUSTED_SCOPES
    ]
    drivers = sorted({k.rsplit(".", 1)[0] for k in keys if k})
    bad = next((d for d in drivers if "=" in d), None)
    if bad is not None:
        raise ConfigError(
            f"the git config of the repository at {cwd} defines the filter driver "
            f"{bad.removeprefix('filter.')!r}, which cannot be switched off (a '=' in its "
            "name): refused"
        )
    return drivers


def _git(
    cwd: Path, args: list[str], stdin: bytes | None = None, env: Mapping[str, str] | None = None
) -> tuple[int, bytes] | None:
    """``git ARGS`` in ``cwd``: its exit status and what it printed; None when git is missing.

    Every git command of the package runs here, with :data:`SAFE_GIT_CONFIG`. A repository
    git refuses because another user owns it is a :class:`ConfigError` naming git's fix,
    never a silent fallback to gathering without git (which would not know git's ignore
    rules, e.g. ``.git/info/exclude``).
    """
    argv = git_command(cwd, args)
    out = _run_git(argv[0], cwd, argv[2:], stdin, env) if argv is not None else None
    if out is None:
        return None
    check_refusal(cwd, out.returncode, out.stderr)
    return out.returncode, out.stdout


def git_command(cwd: Path, args: list[str]) -> list[str] | None:
    """The command line that runs ``git ARGS`` in ``cwd`` as :func:`_git` runs it (with
    :data:`SAFE_GIT_CONFIG`, filters switched off where git would run them); None when git
    is missing or cannot list the filters (one it cannot switch off: :class:`ConfigError`).
    Run it with :func:`git_env`, then :func:`check_refusal`: a command kept running
    (:class:`deepseek_review.git.objects.BlobStore`)."""
    git = git_executable()
    if git is None:
        return None
    config = [a for kv in SAFE_GIT_CONFIG for a in ("-c", kv)]
    if runs_filters(args):
        drivers = _repository_filter_drivers(git, cwd, config)
        if drivers is None:
            return None
        config += [a for d in drivers for k in _FILTER_OFF for a in ("-c", f"{d}.{k}")]
    return [git, "--no-pager", *config, *args]


def check_refusal(cwd: Path, returncode: int, stderr: bytes) -> None:
    """A repository git refused because another user owns it: :class:`ConfigError`."""
    dubious = _DUBIOUS_RE.search(stderr) if returncode else None
    if dubious:
        where = os.fsdecode(dubious.group(1)) or os.fspath(cwd)
        raise ConfigError(
            f"git refuses the repository {where}: it belongs to another user",
            hint=f"if you trust it: git config --global --add safe.directory {where}",
        )


def git_output(
    cwd: Path, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None
) -> bytes | None:
    """What ``git ARGS`` prints in ``cwd``; None when git is missing or the command fails
    (a refused repository: see :func:`_git`). ``stdin``: what the command reads
    (``cat-file --batch``); else it reads nothing. ``env``: variables set for it alone
    (``GIT_INDEX_FILE``)."""
    out = _git(cwd, list(args), stdin, env)
    return out[1] if out is not None and out[0] == 0 else None


class GitFacts(NamedTuple):
    """What one ``git rev-parse`` says of the repository around a folder."""

    inside: bool
    """Whether the folder is inside a git work tree (so git lists its files)."""
    dirs: tuple[str, ...]
    """git's own folders (git dir, common dir), resolved; empty outside a repository."""
    top: Path | None
    """The work tree's top folder; None outside a work tree."""
    object_format: str | None
    """``sha1`` or ``sha256``; None when git did not say."""
    head: str | None
    """The commit ``HEAD`` names when first asked; None before the first commit."""


#: The questions of :func:`git_facts`, in the order git answers them. ``--show-toplevel``
#: dies outside a work tree and ``--verify`` fails on an unborn ``HEAD``: both come last,
#: so what was printed before them still holds.
_FACTS_QUERY = (
    "rev-parse", "--is-inside-work-tree", "--git-dir", "--git-common-dir",
    "--show-object-format", "--show-toplevel", "--verify", "-q", "HEAD^{commit}",
)  # fmt: skip
_FACTS: dict[Path, GitFacts] = {}


def git_facts(where: Path) -> GitFacts:
    """Everything the tool asks git about the repository around ``where`` (root discovery,
    work tree or not, git's folders, object format, ``HEAD``), from ONE ``git rev-parse``,
    asked once per folder and process (the top folder it finds is answered too)."""
    got = _FACTS.get(where)
    if got is not None:
        return got
    ran = _git(where, list(_FACTS_QUERY))
    if ran is None and git_executable() is None and _has_dot_git(where):
        # Gathering without git would not know its ignore rules (an ignored .env is sent).
        require_program("git", f"{where} is in a git repository (its ignore rules need git)")
    lines = [os.fsdecode(line) for line in ran[1].splitlines()] if ran else []
    dirs = tuple(dict.fromkeys(os.path.realpath(os.path.join(where, d)) for d in lines[1:3]))
    fmt = lines[3] if len(lines) > 3 and lines[3] in ("sha1", "sha256") else None
    if (
        lines[:1] in (["true"], ["false"])
        and len(dirs)
        and not _OPERATOR_PLACED.intersection(os.environ)
    ):
        _check_work_tree(where, lines[4] if len(lines) > 4 else "", dirs)
    facts = GitFacts(False, dirs if len(lines) >= 3 else (), None, fmt, None)
    if lines[:1] == ["true"] and len(lines) >= 5 and lines[4]:
        head = lines[5] if ran and ran[0] == 0 and len(lines) > 5 else None
        facts = GitFacts(True, dirs, Path(lines[4]), fmt, head)
        _FACTS.setdefault(facts.top.resolve(), facts)  # type: ignore[union-attr]
    return _FACTS.setdefault(where, facts)


#: The operator's own say over where the repository and its work tree are: with either set,
#: git's answer is theirs (:func:`_check_work_tree` does not second-guess it).
_OPERATOR_PLACED = frozenset({"GIT_DIR", "GIT_WORK_TREE"})


def _check_work_tree(where: Path, top: str, dirs: tuple[str, ...]) -> None:
    """Refuse a work tree the repository's own config moved (``core.worktree`` naming a
    parent folder, ``$HOME`` or ``/``; ``core.bare``, which would make the folder be
    gathered without git's ignore rules): the root is the folder that holds ``.git``."""
    if top:
        if not _holds_git_dir(Path(top), dirs[0]):
            raise ConfigError(
                f"the repository {dirs[0]} puts its work tree at {top}, not in the folder "
                "that holds its .git (core.worktree in its config?): refused",
                hint="set GIT_DIR and GIT_WORK_TREE to review such a work tree",
            )
    elif not any(os.path.commonpath([os.path.realpath(where), d]) == d for d in dirs):
        raise ConfigError(
            f"git says {where} is in no work tree of the repository {dirs[0]} (core.bare or "
            "core.worktree in its config?): refused",
            hint="set GIT_DIR and GIT_WORK_TREE to review such a work tree",
        )


def _holds_git_dir(top: Path, git_dir: str) -> bool:
    """Whether ``top/.git`` is ``git_dir``, or a file naming it (a linked worktree, a
    submodule, ``--separate-git-dir``)."""
    dot = top / ".git"
    try:
        if dot.is_dir():
            return os.path.realpath(dot) == git_dir
        with open(dot, "rb") as fh:
            first = fh.read(4096).split(b"\n", 1)[0]
    except OSError:
        return False
    named = os.fsdecode(first.removeprefix(b"gitdir:").strip())
    return first.startswith(b"gitdir:") and os.path.realpath(top / named) == git_dir


def _has_dot_git(where: Path) -> bool:
    """Whether ``where`` or a folder above it holds a ``.git``."""
    here = Path(os.path.abspath(where))
    return any(os.path.lexists(d / ".git") for d in (here, *here.parents))


def forget_git_facts() -> None:
    """Ask git again (a test that runs ``git init`` between two commands in one process)."""
    _FACTS.clear()


def git_toplevel(start: Path) -> Path | None:
    """The enclosing git work tree of ``start``, or None (not a repo, or git is missing)."""
    return git_facts(start).top


def find_repo_root(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """``--repo-root``, else the enclosing git work tree, else the current folder."""
    here = Path.cwd() if cwd is None else cwd
    named = None if explicit is None else os.fspath(explicit)
    return settled(("root", here, named), lambda: _find_repo_root(explicit, here))


def _find_repo_root(explicit: str | os.PathLike[str] | None, here: Path) -> Path:
    if explicit is not None:
        root = (here / Path(explicit)).resolve()
        if not root.is_dir():
            raise ConfigError(f"{name_of('repo_root')} {os.fspath(explicit)!s}: not a folder")
        return root
    top = git_toplevel(here)
    if top is not None:
        return top.resolve()
    root = here.resolve()
    if root not in _TOLD_NOT_GIT:
        _TOLD_NOT_GIT.add(root)
        from deepseek_review.util.logs import log

        log.info(
            "not in a git repository: %s is the root (paths are taken from it; %s names another)",
            root,
            name_of("repo_root"),
        )
    return root


#: Roots already said to be outside git (a batch finds its root more than once).
_TOLD_NOT_GIT: set[Path] = set()


def in_git_work_tree(root: Path) -> bool:
    """Whether ``root`` is inside a git work tree (so git lists its files)."""
    return git_facts(root).inside


def git_dirs(root: Path) -> tuple[str, ...]:
    """git's own folders for the repository at ``root``: its git dir and common dir, resolved.

    Usually ``<root>/.git``, but ``git init --separate-git-dir`` or a linked worktree can put
    them anywhere, under any name; empty outside a git repository.
    """
    return git_facts(root).dirs


def under_dot_git(rel: str) -> bool:
    """Whether the repo-relative ``rel`` is (inside) a folder named ``.git``, in any case:
    this repository's, a nested one's, a submodule's."""
    return ".git" in rel.lower() and any(p.lower() == ".git" for p in rel.split("/"))


_ASCII_UNSAFE_RE = re.compile(r"[\x00-\x1f\x7f]")


def has_unsafe_chars(rel: str) -> bool:
    """Whether a name holds a character that could break or fake the framing it is shown in.

    Control characters (a newline starts a new heading), C1 controls, bidi controls (the
    text is shown in another order than it is sent), invisible format characters (two
    names that look the same) and U+2028/U+2029 (line breaks to many readers).
    """
    if rel.isascii():
        return _ASCII_UNSAFE_RE.search(rel) is not None
    return any(is_unsafe_char(c) for c in rel)


def to_relative(root: Path, path: Path) -> str:
    """``path`` (already resolved, inside ``root``) as a repo-relative POSIX string."""
    return PurePosixPath(path.relative_to(root).as_posix()).as_posix()


def resolve_inside(root: Path, user_path: str, *, what: str = "path") -> tuple[Path, str]:
    """Resolve ``user_path`` against ``root``; refuse it if it (or a symlink in it) leads out.

    Returns the resolved absolute path and the repo-relative POSIX path *as the user named
    it* (normalised, symlinks inside the repository kept as named), so receipts show the
    names people recognise.
    """
    return settled(("inside", root, user_path), lambda: _resolve_inside(root, user_path, what))


def _other_root_hint(target: Path) -> str:
    """How to reach ``target``, a path outside the root: the repository (or folder) holding
    it, named with ``--repo-root`` ("" when it does not exist: nothing to suggest)."""
    folder = target if target.is_dir() else target.parent
    if not folder.is_dir():
        return ""
    top = git_toplevel(folder)
    return f"for files of another repository, pass {name_of('repo_root')} {top or folder}"


def _resolve_inside(root: Path, user_path: str, what: str) -> tuple[Path, str]:
    if user_path == "" or user_path.strip() == "":
        raise InputError(f"{what} is empty")
    if "\x00" in user_path:
        raise InputError(f"{what} {user_path!r}: contains a NUL byte")
    raw = Path(user_path)
    candidate = raw if raw.is_absolute() else root / raw
    # Normalise lexically first (so "a/../b" is judged as "b"), then resolve symlinks.
    lexical = Path(os.path.normpath(candidate))
    resolved = lexical.resolve()
    try:
        lexical_rel = lexical.relative_to(root)
    except ValueError:
        # An absolute path may reach the root through a symlinked prefix (/tmp -> /private/tmp).
        try:
            lexical_rel = resolved.relative_to(root)
        except ValueError:
            raise InputError(
                f"{what} {user_path}: outside the repository root {root}",
                hint=_other_root_hint(resolved),
            ) from None
    try:
        resolved.relative_to(root)
    except ValueError:
        raise InputError(
            f"{what} {user_path}: a symlink leads outside the repository root ({resolved})"
        ) from None
    rel = lexical_rel.as_posix()
    if rel in ("", "."):
        rel = "."
    return resolved, rel


def read_regular_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file; :class:`OSError` ("not a regular file", too big) for
    anything else: :func:`util.safejson.read_file`, the one reader of review files."""
    from deepseek_review.util.safejson import read_file

    return read_file(path)


def files_unchanged_since(root: Path, rev: str, folders: list[str], *, what: str) -> set[str]:
    """Repo-relative paths under ``folders`` that ``rev`` holds and the work tree still has
    byte for byte: what a pull request did not add or touch, when ``rev`` is its base.

    Git answers both halves (``ls-tree`` at ``rev``, ``diff`` of ``rev`` against the work
    tree), so its own rules (line endings, filters) decide "unchanged".
    """
    if (
        rev.startswith("-")
        or git_output(root, "rev-parse", "--verify", "-q", rev + "^{commit}") is None
    ):
        raise ConfigError(f"{what} {rev!r}: not a commit of the repository at {root}")
    specs = ["--", *folders]
    listed = git_output(root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", rev, *specs)
    changed = git_output(
        root,
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--name-only",
        "-z",
        rev,
        *specs,
    )
    if listed is None or changed is None:
        raise ConfigError(f"{what} {rev!r}: git could not compare it with the work tree")
    names = {os.fsdecode(n) for n in listed.split(b"\0") if n}
    return names - {os.fsdecode(n) for n in changed.split(b"\0") if n}
