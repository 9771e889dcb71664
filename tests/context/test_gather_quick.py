"""The quick read of a listed file (:func:`deepseek_review.context.read.read_entries`) gives
what reading each file the full way gives, for every kind of file a folder can list, and the
framing's quick ``FileRef`` is the ``FileRef`` its constructor makes."""

from __future__ import annotations

import os
from pathlib import Path

from deepseek_review.context.read import PIECE, Opener, read_context_file, read_entries
from deepseek_review.records.parts import file_ref
from deepseek_review.reviewing.prompt import FileRef

MAX = 100_000


def _kinds(root: Path, outside: Path) -> list[str]:
    """One file of each kind, in folders as git lists them (several per folder)."""
    files: dict[str, bytes] = {
        "a/plain.py": b"x = 1\n",
        "a/empty.py": b"",
        "a/no-newline.md": b"no newline",
        "a/fenced.md": b"```python\nprint(1)\n```\n",
        "a/binary.bin": b"ab\0cd",
        "a/latin1.txt": b"caf\xe9\n",
        "a/utf8.txt": "café ☕\n".encode(),
        "a/cut.txt": "☕".encode()[:2],
        "b/one-piece.txt": b"y" * (PIECE - 1),
        "b/two-pieces.txt": b"z" * (PIECE + 10),
        "b/over-limit.txt": b"w" * (MAX + 1),
        "c/.gitignore": b"*.log\n",
        "c/.GIT/config": b"[core]\n",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (outside / "secret.txt").write_text("secret\n", encoding="utf-8")
    (root / "a" / "link-out.txt").symlink_to(outside / "secret.txt")
    (root / "a" / "link-in.txt").symlink_to(root / "a" / "plain.py")
    (root / "a" / "link-folder").symlink_to(root / "b")
    os.mkfifo(root / "a" / "pipe")
    (root / "d").mkdir()
    return [*files, "a/link-out.txt", "a/link-in.txt", "a/link-folder", "a/pipe", "a/gone.py", "d"]


def test_every_kind_of_listed_file_reads_as_it_does_alone(tmp_path: Path) -> None:
    root, outside = tmp_path / "repo", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    rels = _kinds(root, outside)
    with Opener(root) as opener:
        together = list(read_entries(opener, [(rel, False) for rel in rels], MAX))
    alone = [read_context_file(root, rel, explicit=False, max_file_bytes=MAX) for rel in rels]
    assert together == alone
    assert [type(r).__name__ for r in together].count("ContextFile") == 9


def test_a_quick_file_ref_is_equal_to_the_constructed_one() -> None:
    quick, made = file_ref("src/a.py", "sha256:ab", 7), FileRef("src/a.py", "sha256:ab", 7)
    assert quick == made and hash(quick) == hash(made) and repr(quick) == repr(made)
    assert type(quick) is FileRef and {quick: 1}[made] == 1
