"""Writing files: atomic, never overwriting, never leaving temporary files behind."""

from __future__ import annotations

import errno
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from deepseek_review.errors import ConfigError, OutputError
from deepseek_review.records import storage
from deepseek_review.records.naming import (
    check_topic,
    claim_answer,
    model_slug,
    stem_for,
    utc_stamp,
)
from deepseek_review.records.storage import ensure_dir, stale_temp_files, write_new, write_output


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(storage.TEMP_PREFIX))


# --------------------------------------------------------------------------- write_new


def test_write_new_creates_the_file_with_exactly_the_bytes(tmp_path):
    data = "naïve → ½\n".encode() + bytes(range(256))
    write_new(tmp_path / "a.md", data)
    assert (tmp_path / "a.md").read_bytes() == data
    assert temps(tmp_path) == []


def test_write_new_never_overwrites_an_existing_file(tmp_path):
    (tmp_path / "a.md").write_bytes(b"original")
    with pytest.raises(FileExistsError):
        write_new(tmp_path / "a.md", b"replacement")
    assert (tmp_path / "a.md").read_bytes() == b"original"
    assert temps(tmp_path) == []


def test_write_new_leaves_no_temp_file_when_writing_fails(tmp_path, monkeypatch):
    def broken_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="I/O error"):
        write_new(tmp_path / "a.md", b"data")
    assert not (tmp_path / "a.md").exists()
    assert temps(tmp_path) == []


def test_write_new_leaves_no_temp_file_when_linking_fails(tmp_path, monkeypatch):
    def broken_link(src: object, dst: object) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "link", broken_link)
    with pytest.raises(OSError):
        write_new(tmp_path / "a.md", b"data")
    assert list(tmp_path.iterdir()) == []


def test_write_new_without_hard_links_falls_back_to_rename(tmp_path, monkeypatch):
    def no_links(src: object, dst: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    write_new(tmp_path / "a.md", b"data")
    assert (tmp_path / "a.md").read_bytes() == b"data"
    assert temps(tmp_path) == []


def test_write_new_without_hard_links_still_never_overwrites(tmp_path, monkeypatch):
    def no_links(src: object, dst: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    (tmp_path / "a.md").write_bytes(b"original")
    with pytest.raises(FileExistsError):
        write_new(tmp_path / "a.md", b"replacement")
    assert (tmp_path / "a.md").read_bytes() == b"original"
    assert temps(tmp_path) == []


def test_write_new_into_a_missing_folder_fails_cleanly(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_new(tmp_path / "missing" / "a.md", b"data")


def test_write_output_names_the_file_when_it_exists(tmp_path):
    (tmp_path / "a.md").write_bytes(b"original")
    with pytest.raises(OutputError, match=r"reviews/a\.md: already exists"):
        write_output(tmp_path / "a.md", b"x", shown="reviews/a.md")


def test_write_output_turns_os_errors_into_output_errors(tmp_path):
    with pytest.raises(OutputError, match=r"out/a\.md: cannot write"):
        write_output(tmp_path / "missing" / "a.md", b"x", shown="out/a.md")


# --------------------------------------------------------------------------- names


def test_stem_is_topic_model_and_utc_stamp():
    stamp = utc_stamp(datetime(2026, 5, 12, 3, 35, 51, tzinfo=UTC))
    assert stamp == "20260512T033551Z"
    assert stem_for("spec_check", "deepseek-v4-flash", stamp, continuation=False) == (
        "spec_check_deepseek_deepseek-v4-flash_20260512T033551Z"
    )
    assert (
        stem_for("t", "m", stamp, continuation=True) == "t_deepseek_m_continuation_20260512T033551Z"
    )


@pytest.mark.parametrize(
    ("model", "slug"),
    [
        ("deepseek-v3.1:671b", "deepseek-v3.1-671b"),
        ("deepseek-v3.1:671b-cloud", "deepseek-v3.1-671b-cloud"),
        ("library/deepseek r1", "library-deepseek-r1"),
        ("../../etc", "etc"),
        ("::", "model"),
    ],
)
def test_model_slug_is_safe_in_a_file_name(model, slug):
    assert model_slug(model) == slug


@pytest.mark.parametrize("topic", ["spec_check", "a", "v1.2-review", "X" * 120])
def test_valid_topics_are_accepted(topic):
    assert check_topic(topic) == topic


@pytest.mark.parametrize("topic", ["", "../up", "a/b", "a b", "-x", ".hidden", "X" * 121, "é"])
def test_unsafe_topics_are_refused(topic):
    with pytest.raises(ConfigError, match=r"^topic .*: use letters"):
        check_topic(topic)


def test_claim_answer_takes_the_next_free_name(tmp_path):
    first = claim_answer(tmp_path, "s", b"one", shown_folder="reviews")
    second = claim_answer(tmp_path, "s", b"two", shown_folder="reviews")
    third = claim_answer(tmp_path, "s", b"three", shown_folder="reviews")
    assert [p.name for p in (first, second, third)] == ["s.md", "s-2.md", "s-3.md"]
    assert [p.read_bytes() for p in (first, second, third)] == [b"one", b"two", b"three"]


@pytest.mark.parametrize("sibling", ["s.receipt.json", "s.request.json", "s.reasoning.md"])
def test_claim_answer_skips_a_name_whose_sibling_is_left_over(tmp_path, sibling):
    (tmp_path / sibling).write_text("stale")
    assert claim_answer(tmp_path, "s", b"new", shown_folder="reviews").name == "s-2.md"
    assert (tmp_path / sibling).read_text() == "stale"


def test_concurrent_claims_of_one_stem_get_distinct_files(tmp_path):
    results: list[Path] = []
    lock = threading.Lock()
    barrier = threading.Barrier(12)

    def claim(i: int) -> None:
        barrier.wait()
        path = claim_answer(tmp_path, "same", f"writer {i}".encode(), shown_folder="reviews")
        with lock:
            results.append(path)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({p.name for p in results}) == 12
    assert sorted(p.read_text() for p in results) == sorted(f"writer {i}" for i in range(12))
    assert temps(tmp_path) == []


def test_stale_temp_files_finds_only_temp_files(tmp_path):
    (tmp_path / f"{storage.TEMP_PREFIX}abc{storage.TEMP_SUFFIX}").write_text("x")
    (tmp_path / "review.md").write_text("x")
    assert [p.name for p in stale_temp_files(tmp_path)] == [
        f"{storage.TEMP_PREFIX}abc{storage.TEMP_SUFFIX}"
    ]


def test_ensure_dir_creates_nested_folders(tmp_path):
    ensure_dir(tmp_path / "a" / "b", shown="a/b")
    assert (tmp_path / "a" / "b").is_dir()


def test_ensure_dir_refuses_a_file_in_the_way(tmp_path):
    (tmp_path / "reviews").write_text("not a folder")
    with pytest.raises(OutputError, match="reviews"):
        ensure_dir(tmp_path / "reviews", shown="reviews")


def test_written_files_are_readable_by_others(tmp_path):
    old = os.umask(0o022)
    try:
        write_new(tmp_path / "a.md", b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.md").stat().st_mode & 0o777 == 0o644
