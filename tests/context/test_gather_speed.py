"""The quick paths of ``run --dry-run -c .`` on many files keep every check of the slow ones.

Gathering checks all names in one pass when they are plain ASCII, opens the next file of the
same folder relative to the folder already open, and framing writes a closing fence and the
next heading as one string: each is checked here against what it replaced.
"""

from __future__ import annotations

import errno
import itertools
import os
import posixpath
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from deepseek_review.context.gather import ContextFile, ContextLimits, gather_context
from deepseek_review.context.pins import auto_pin
from deepseek_review.context.read import Opener
from deepseek_review.reviewing.prompt import (
    _LANGUAGES,
    FileRef,
    _language,
    _merge,
    frame_messages,
    load_template,
)
from deepseek_review.reviewing.request import BodyOptions, WireMessage, prepare
from tests.support.cli import CliResult
from tests.support.git import git


def test_language_is_what_splitext_gives() -> None:
    """The fence's language is read from the extension exactly as ``posixpath.splitext``
    splits it (a name's leading dots start no extension), for every short path."""
    alphabet = ["a", ".", "/", "py", "PY", "md", ".."]
    for n in range(1, 6):
        for letters in itertools.product(alphabet, repeat=n):
            path = "".join(letters)
            want = _LANGUAGES.get(posixpath.splitext(path)[1].lower(), "")
            assert _language(path) == want, path


def _files(root: Path, names: dict[str, str]) -> None:
    for name, text in names.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def test_framed_parts_are_merged_and_join_to_the_framing(repo: Path) -> None:
    """The parts of a framed review hold no empty and no adjacent literal strings (the record
    stores them so), and join to each file's heading, fence, text and closing fence."""
    _files(repo, {"a.py": "x = 1\n", "b.md": "no newline", "c/d.txt": "has ``` inside\n"})
    files = list(gather_context(repo, ["a.py", "b.md", "c/d.txt"]))
    template = load_template()
    for role, parts in frame_messages(template, "Check.", "t", files, lead=("the change\n",)):
        assert list(parts) == list(_merge(list(parts))), role
    user = dict(frame_messages(template, "Check.", "t", files))["user"]
    texts = {f.path: f.text for f in files}
    joined = "".join(p if isinstance(p, str) else texts[p.path] for p in user)
    assert (
        "## File 1 of 3: a.py\n\n```python\nx = 1\n```\n\n"
        "## File 2 of 3: b.md\n\n```markdown\nno newline\n```\n\n"
        "## File 3 of 3: c/d.txt\n\n````text\nhas ``` inside\n````\n"
    ) in joined
    assert [p.path for p in user if isinstance(p, FileRef)] == ["a.py", "b.md", "c/d.txt"]


def test_request_bytes_of_many_files_are_the_json_encoders(repo: Path) -> None:
    """A body over the size written piece by piece holds exactly the bytes ``json.dumps``
    gives for the joined messages (names with non-ASCII letters included)."""
    import json

    names = {f"src/p{d}/m{i}é.py": f"def f{i}(x):\n    return x + {i}\n" * 400 for d in range(3)
             for i in range(40)}  # fmt: skip
    _files(repo, names)
    files = list(gather_context(repo, ["src"], ContextLimits(1 << 24, 1 << 24)))
    framed = frame_messages(load_template(), "Review.", "t", files)
    texts = {f.path: f.text for f in files}
    joined = [
        {"role": r, "content": "".join(p if isinstance(p, str) else texts[p.path] for p in parts)}
        for r, parts in framed
    ]
    options = BodyOptions(model="m")
    got = prepare(options, [WireMessage(r, p, None) for r, p in framed], dict(texts))
    assert len(got.body_bytes) > 1 << 20  # the piece-by-piece writer
    want = {
        "max_tokens": options.max_tokens, "messages": joined, "model": "m",
        "stream": options.stream, "temperature": options.temperature,
    }  # fmt: skip
    if options.stream:
        want["stream_options"] = {"include_usage": True}
    encoded = json.dumps(want, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert got.body_bytes == encoded.encode("utf-8")


@pytest.mark.parametrize("name", ["/etc/passwd", "..", ".", ""])
def test_opener_refuses_a_path_that_is_not_plain_after_a_file_of_the_root(
    repo: Path, name: str
) -> None:
    """Once a file of the root was opened, a next path of the "same folder" that is not a
    plain name (absolute, ``..``, ``.``, empty) is still refused, never opened."""
    with Opener(repo) as opener:
        os.close(opener.open(".gitignore"))
        with pytest.raises(OSError) as caught:
            os.close(opener.open(name))
    assert caught.value.errno in (errno.EINVAL, errno.ELOOP, errno.EISDIR, errno.ENOENT)
    assert name != "/etc/passwd" or caught.value.errno == errno.EINVAL


def test_opener_opens_the_next_file_of_a_folder_swapped_for_a_link_as_before(
    repo: Path, tmp_path: Path
) -> None:
    """A folder swapped for a symlink after one of its files was opened: the next file is
    read from the folder that was checked (held open), never through the link."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mean.py").write_text("stolen\n", encoding="utf-8")
    with Opener(repo) as opener:
        os.close(opener.open("src/pkg/__init__.py"))
        (repo / "src" / "pkg").rename(repo / "src" / "old")
        (repo / "src" / "pkg").symlink_to(outside)
        fd = opener.open("src/pkg/mean.py")
        try:
            assert os.read(fd, 100) == b"def mean(xs):\n    return sum(xs) / len(xs)\n"
        finally:
            os.close(fd)
    with Opener(repo) as fresh, pytest.raises(OSError) as caught:
        fresh.open("src/pkg/mean.py")
    assert caught.value.errno in (errno.ELOOP, errno.ENOTDIR)  # a link on the way


def test_a_listed_name_with_a_newline_among_plain_names_is_left_out(
    repo: Path, cli: Callable[..., CliResult]
) -> None:
    """One name with a control character among many plain ones: the one-pass check sees it
    and the file is left out by name, as when every name was checked alone."""
    _files(repo, {f"many/f{i}.txt": "x\n" for i in range(50)})
    (repo / "many" / "bad\nname.txt").write_text("x\n", encoding="utf-8")
    git(repo, "add", "-A")
    r = cli("run", "--dry-run", "-c", "many", "-p", "Review.")
    assert r.code == 0, r.err
    assert "many/bad\\x0aname.txt  name holds control characters" in r.out
    assert "skipped many/bad\\x0aname.txt: name holds control characters" in r.err


def test_head_blobs_are_read_from_line_starts_only(repo: Path) -> None:
    """``ls-tree``'s output is read in one pass: a committed name holding a tab and text that
    looks like another blob's line pins to its own blob, and nothing else is made up."""
    fake = "0" * 40
    tricky = f"a\t100644 blob {fake}\tb.py"
    (repo / tricky).write_text("x = 1\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    # Never context (a tab is a control character), but the listing holds it all the same.
    trick = ContextFile(tricky, "x = 1\n", "sha256:-", 6)
    files = [trick, *gather_context(repo, ["docs/spec.md"])]
    pins = {p.path: p for p in auto_pin(repo, files)}
    want = git(repo, "rev-parse", f"HEAD:{tricky}").strip()
    assert pins[tricky].blob == want
    assert pins["docs/spec.md"].blob == git(repo, "rev-parse", "HEAD:docs/spec.md").strip()
    assert fake not in {p.blob for p in pins.values()}


def test_files_not_in_head_are_pinned_to_their_bytes(repo: Path) -> None:
    """Before the first commit every file is pinned to its working-tree hash."""
    files = list(gather_context(repo, ["docs", "src"]))
    pins = auto_pin(repo, files)
    assert [(p.path, p.blob, p.worktree) for p in pins] == [(f.path, None, f.sha256) for f in files]
    assert pins[0].to_json() == {"path": files[0].path, "worktree": files[0].sha256}


@pytest.mark.parametrize(
    "section",
    [
        "{{ context }}",
        "{{context}}{{ prompt }}",
        "Files:\n{{ file_list }}{{ context }}\n\n{{ prompt }} on {{ topic }}",
        "{{ prompt }}{{ context }}{{ file_list }}",
        "{{ topic }}{{ context }}end",
    ],
)
@pytest.mark.parametrize("lead", [(), ("the change\n",), ("",)])
@pytest.mark.parametrize("empty", [False, True])
def test_a_section_renders_to_the_parts_one_merge_of_everything_gives(
    section: str, lead: tuple[str, ...], empty: bool
) -> None:
    """Joining only at the seams gives exactly the parts one merge of the whole list gave:
    placeholders next to each other, empty values, no files and a change before them."""
    from deepseek_review.reviewing.prompt import _render_section, frame_parts

    files = (
        [] if empty else [ContextFile("a.py", "x\n", "sha256:a", 2), ContextFile("b", "", "", 0)]
    )
    values = {"prompt": "Check.", "topic": "" if empty else "t", "file_list": "- a.py"}
    context = list(_merge([*lead, *frame_parts(files)]))
    flat: list[object] = []
    pos = 0
    for m in re.finditer(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", section):
        flat.append(section[pos : m.start()])
        flat.extend(context if m.group(1) == "context" else [values[m.group(1)]])
        pos = m.end()
    flat.append(section[pos:])
    assert _render_section(section, values, context) == _merge(flat)  # type: ignore[arg-type]
