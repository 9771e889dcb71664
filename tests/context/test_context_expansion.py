"""What a folder or glob sends: never the tool's own outputs, never one file that cannot be
sent in place of the whole review, and never more than ``--max-context-bytes`` as framed.

From the issue "What a real user hit in the first hour": ``run -c .`` sent the previous
reviews' answers, receipts and records; a batch entry with ``context = "."`` was ``new`` on
every re-run; one PNG logo stopped a review of a whole repository; 3,000 tiny files made a
282 KB request under a 400 KB limit that counted file bytes only.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator
from tests.support.cli import files_under
from tests.support.context import assert_refused, run_against, write

Cli = Callable[..., Any]

#: The first bytes of a real PNG file: the NUL of the IHDR chunk's length is at offset 8.
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00"
SECRET = "outsideFAKEsecret0do0not0send0C3"


def bodies(simulator: Simulator) -> list[bytes]:
    return [r.body for r in simulator.chat_requests()]


def sent_text(simulator: Simulator) -> str:
    """Every message of the last request, joined."""
    body = json.loads(simulator.chat_requests()[-1].body)
    return "\n".join(m["content"] for m in body["messages"])


def summary_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "left out" in line]


# --------------------------------------------------------------------------- own outputs


def test_second_review_of_the_whole_repository_sends_none_of_the_first_ones_files(
    repo, simulator, cli
):
    first = run_against(cli, simulator, "-c", ".")
    assert first.code == 0, first.err
    written = files_under(repo / "reviews")
    assert len(written) == 3  # answer, receipt, request record
    second = run_against(cli, simulator, "-c", ".")
    assert second.code == 0, second.err
    one, two = bodies(simulator)
    assert two == one  # the same repository, the same request
    for name in written:
        assert name.encode() not in two


def test_file_in_the_output_folder_named_explicitly_is_sent(repo, simulator, cli):
    run_against(cli, simulator, "-c", "docs/spec.md")
    (answer,) = [p for p in files_under(repo / "reviews") if p.endswith("Z.md")]
    r = run_against(cli, simulator, "-c", ".", "-c", f"reviews/{answer}")
    assert r.code == 0, r.err
    text = sent_text(simulator)
    assert f"reviews/{answer}" in text
    assert ".receipt.json" not in text
    assert ".request.json" not in text


def test_dry_run_lists_the_output_folder_as_left_out(repo, simulator, cli):
    run_against(cli, simulator, "-c", "docs/spec.md")
    r = run_against(cli, simulator, "--dry-run", "-c", ".")
    assert r.code == 0, r.err
    assert "left out       3 files\n" in r.out
    assert "  reviews/  the output folder (3 files)\n" in r.out
    assert "reviews/review_" not in r.out


def test_dry_run_json_lists_the_output_folder_as_left_out(repo, simulator, cli):
    run_against(cli, simulator, "-c", "docs/spec.md")
    r = run_against(cli, simulator, "--dry-run", "--json", "-c", ".")
    assert r.code == 0, r.err
    data = r.json()
    assert {"path": "reviews/", "reason": "the output folder (3 files)"} in data["skipped"]
    assert not [f for f in data["context_files"] if f["path"].startswith("reviews/")]


def test_a_configured_output_folder_is_left_out(repo, simulator, cli):
    (repo / ".deepseek-review.toml").write_text('output_dir = "notes/ai"\n', encoding="utf-8")
    write(repo, "notes/ai/README.md", "what the reviews are for\n")
    write(repo, "notes/todo.md", "- more tests\n")
    r = run_against(cli, simulator, "--dry-run", "--json", "-c", "notes")
    assert r.code == 0, r.err
    data = r.json()
    assert [f["path"] for f in data["context_files"]] == ["notes/todo.md"]
    assert data["skipped"] == [{"path": "notes/ai/", "reason": "the output folder (1 file)"}]


def test_reviews_written_to_another_folder_are_left_out_by_their_names(repo, simulator, cli):
    run_against(cli, simulator, "-c", "docs/spec.md")
    r = run_against(cli, simulator, "-c", ".", "--output-dir", "audits")
    assert r.code == 0, r.err
    text = sent_text(simulator)
    assert "reviews/" not in text
    r = run_against(cli, simulator, "--dry-run", "--json", "-c", ".", "--output-dir", "audits")
    reasons = {s["path"]: s["reason"] for s in r.json()["skipped"]}
    for name in files_under(repo / "reviews"):
        assert reasons[f"reviews/{name}"] == "written by deepseek-review (name it to send it)"


def test_a_folder_holding_only_outputs_is_refused_saying_why(repo, simulator, cli):
    run_against(cli, simulator, "-c", "docs/spec.md")
    simulator.reset()
    before = files_under(repo / "reviews")
    r = run_against(cli, simulator, "-c", "reviews")
    assert r.code == 3, r.err
    (line,) = r.err.strip().splitlines()
    assert "context folder reviews: nothing it holds can be sent" in line
    assert "reviews/: the output folder (3 files)" in line
    assert "name a file to send it" in line
    assert bodies(simulator) == []
    assert files_under(repo / "reviews") == before


def batch_manifest(repo: Path, entries: dict[str, dict[str, Any]]) -> None:
    lines = []
    for topic, values in entries.items():
        lines += ["[[review]]", f'topic = "{topic}"', 'prompt = "Check it."']
        lines += [f"{k} = {json.dumps(v)}" for k, v in values.items()]
        lines.append("")
    (repo / "reviews.toml").write_text("\n".join(lines), encoding="utf-8")


def batch(cli: Cli, simulator: Simulator, *args: str) -> Any:
    return cli(
        "batch", "reviews.toml", "--endpoint", simulator.base_url, "--retry-wait", "0.01",
        "--json", *args,
    )  # fmt: skip


def statuses(r: Any) -> dict[str, str]:
    return {e["topic"]: e["status"] for e in r.json()["entries"]}


def test_batch_entry_reviewing_the_whole_repository_is_skipped_on_the_rerun(repo, simulator, cli):
    batch_manifest(repo, {"all": {"context": "."}})
    first = batch(cli, simulator)
    assert statuses(first) == {"all": "ok"}, first.err
    again = batch(cli, simulator)
    assert statuses(again) == {"all": "skipped"}, again.err
    assert len(simulator.chat_requests()) == 1


def test_batch_report_inside_the_repository_is_never_context(repo, simulator, cli):
    batch_manifest(repo, {"all": {"context": "."}})
    first = batch(cli, simulator, "--report", "batch-report.json")
    assert statuses(first) == {"all": "ok"}, first.err
    assert (repo / "batch-report.json").is_file()
    again = batch(cli, simulator, "--report", "batch-report.json")
    assert statuses(again) == {"all": "skipped"}, again.err
    assert len(simulator.chat_requests()) == 1


def test_batch_leaves_every_entrys_output_folder_out_of_every_entry(repo, simulator, cli):
    write(repo, "out-b/README.md", "what entry b writes here\n")
    batch_manifest(
        repo,
        {
            "a": {"context": ".", "output_dir": "out-a"},
            "b": {"context": "docs/spec.md", "output_dir": "out-b"},
        },
    )
    r = batch(cli, simulator, "--dry-run")
    assert r.code == 0, r.err
    a = r.json()["entries"][0]
    assert {"path": "out-b/", "reason": "an output folder of the batch (1 file)"} in a["left_out"]
    r = cli("batch", "reviews.toml", "--endpoint", simulator.base_url, "--dry-run")
    assert "new       a  (5 files, 1 left out, " in r.out


# --------------------------------------------------------------------------- cannot be sent


@pytest.fixture
def mixed(repo: Path, tmp_path: Path) -> Path:
    """The repo fixture plus one file of every kind a folder may hold but cannot send: a PNG
    logo, a latin-1 file, a symlink out of the repository, a file over --max-file-bytes 2000."""
    (repo / "assets").mkdir()
    (repo / "assets" / "logo.png").write_bytes(PNG)
    (repo / "docs" / "latin1.md").write_bytes("caf\u00e9\n".encode("latin-1"))
    outside = tmp_path / "outside" / "secret.md"
    outside.parent.mkdir()
    outside.write_text(f"key {SECRET}\n", encoding="utf-8")
    (repo / "docs" / "elsewhere.md").symlink_to(outside)
    write(repo, "data/huge.sql", "select 1;\n" * 500)
    return repo


def run_mixed(cli: Cli, simulator: Simulator, *args: str) -> Any:
    return run_against(cli, simulator, "--max-file-bytes", "2000", *args)


@pytest.mark.parametrize("spec", [".", "**"], ids=["folder", "glob"])
def test_files_a_folder_or_glob_cannot_send_are_left_out_and_the_rest_is_sent(
    mixed, simulator, cli, spec
):
    r = run_mixed(cli, simulator, "-c", spec)
    assert r.code == 0, r.err
    text = sent_text(simulator)
    assert "docs/spec.md" in text
    assert "src/pkg/mean.py" in text
    for left in ("assets/logo.png", "docs/latin1.md", "docs/elsewhere.md", "data/huge.sql"):
        assert left not in text
    assert SECRET not in text


def test_one_stderr_line_counts_what_was_left_out_by_kind(mixed, simulator, cli):
    r = run_mixed(cli, simulator, "-c", ".")
    assert r.code == 0, r.err
    assert summary_lines(r.err) == [
        "deepseek-review: left out 4 files (1 binary, 1 over --max-file-bytes, "
        "1 a symlink out of the repository, 1 not UTF-8); --dry-run lists them"
    ]


def test_dry_run_lists_every_file_left_out_with_its_reason(mixed, simulator, cli, tmp_path):
    r = run_mixed(cli, simulator, "--dry-run", "-c", ".")
    assert r.code == 0, r.err
    assert "left out       4 files\n" in r.out
    assert "  assets/logo.png  binary (NUL byte at offset 8)\n" in r.out
    assert "  data/huge.sql  5000 bytes is over --max-file-bytes 2000\n" in r.out
    assert "  docs/latin1.md  not UTF-8 (invalid byte at offset 3)\n" in r.out
    outside = (tmp_path / "outside" / "secret.md").resolve()
    assert f"  docs/elsewhere.md  a symlink leads outside the repository root ({outside})\n" in (
        r.out
    )
    assert bodies(simulator) == []


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("assets/logo.png", "binary (NUL byte at offset 8)"),
        ("docs/latin1.md", "not UTF-8"),
        ("docs/elsewhere.md", "outside the repository root"),
        ("data/huge.sql", "5000 bytes is over --max-file-bytes 2000"),
    ],
    ids=["binary", "latin-1", "link-out", "huge"],
)
def test_a_file_that_cannot_be_sent_is_still_refused_when_named(mixed, simulator, cli, name, words):
    r = run_mixed(cli, simulator, "-c", "docs/spec.md", "-c", name)
    assert_refused(r, simulator, mixed, name, words)


def test_receipt_and_record_name_only_the_files_sent(mixed, simulator, cli):
    r = run_mixed(cli, simulator, "-c", ".", "--json")
    assert r.code == 0, r.err
    seg = r.json()["segments"][0]
    receipt = json.loads((mixed / seg["receipt_path"]).read_text(encoding="utf-8"))
    assert receipt["context_files"] == [
        ".gitignore", "docs/spec.md", "src/pkg/__init__.py", "src/pkg/mean.py",
    ]  # fmt: skip
    record = (mixed / seg["record_path"]).read_text(encoding="utf-8")
    for left in ("assets/logo.png", "docs/latin1.md", "docs/elsewhere.md", "data/huge.sql"):
        assert left not in record


def test_a_folder_where_nothing_can_be_sent_is_refused_naming_the_first_file(mixed, simulator, cli):
    r = run_mixed(cli, simulator, "-c", "docs/spec.md", "-c", "assets")
    assert_refused(
        r, simulator, mixed, "context folder assets: nothing it holds can be sent",
        "assets/logo.png: binary (NUL byte at offset 8)",
    )  # fmt: skip


# --------------------------------------------------------------------------- the framed size


@pytest.fixture
def tiny_files(repo: Path) -> int:
    """3,000 files of 2 bytes under many/; returns the sum of their sizes."""
    many = repo / "many"
    many.mkdir()
    for i in range(3000):
        (many / f"f{i:04d}.txt").write_bytes(b"x\n")
    return 3000 * 2


def test_many_tiny_files_over_the_limit_once_framed_are_refused_naming_the_framed_size(
    tiny_files, repo, simulator, cli
):
    plan = run_against(cli, simulator, "--dry-run", "--json", "-c", "many").json()
    framed = plan["framed_bytes"]
    assert plan["context_bytes"] == tiny_files
    limit = tiny_files + 1000
    r = run_against(cli, simulator, "-c", "many", "--max-context-bytes", str(limit))
    assert_refused(
        r, simulator, repo, f"the prompt as framed is {framed} bytes",
        f"{tiny_files} of context files and {framed - tiny_files} of framing",
        f"over --max-context-bytes {limit}",
    )  # fmt: skip


def test_dry_run_shows_the_file_bytes_and_the_framed_bytes(tiny_files, simulator, cli):
    plan = run_against(cli, simulator, "--dry-run", "--json", "-c", "many").json()
    r = run_against(cli, simulator, "--dry-run", "-c", "many")
    assert r.code == 0, r.err
    assert f"context        3000 files, {tiny_files} bytes\n" in r.out
    assert (
        f"framed         {plan['framed_bytes']} bytes with headings, fences, file list, template "
        "and prompt (--max-context-bytes 400000)\n"
    ) in r.out


def test_framed_size_is_the_text_of_the_messages_sent(repo, simulator, cli):
    plan = run_against(cli, simulator, "--dry-run", "--json", "-c", "docs", "-c", "src").json()
    r = run_against(cli, simulator, "-c", "docs", "-c", "src")
    assert r.code == 0, r.err
    body = json.loads(simulator.chat_requests()[0].body)
    sent = sum(len(m["content"].encode("utf-8")) for m in body["messages"])
    assert plan["framed_bytes"] == sent
    assert plan["framed_bytes"] > plan["context_bytes"]


def test_a_limit_that_holds_the_framed_prompt_is_accepted(tiny_files, simulator, cli):
    plan = run_against(cli, simulator, "--dry-run", "--json", "-c", "many").json()
    limit = str(plan["framed_bytes"])
    r = run_against(
        cli, simulator, "--dry-run", "--json", "-c", "many", "--max-context-bytes", limit
    )
    assert r.code == 0, r.err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_file_in_a_folder_is_left_out(repo, simulator, cli):
    locked = write(repo, "docs/locked.md", "private\n")
    locked.chmod(0)
    r = run_against(cli, simulator, "--dry-run", "--json", "-c", "docs")
    assert r.code == 0, r.err
    assert r.json()["skipped"] == [
        {"path": "docs/locked.md", "reason": "cannot read (Permission denied)"}
    ]


def test_a_file_in_a_folder_that_fails_to_read_is_left_out(repo, simulator, cli, monkeypatch):
    # A disk error on one file (EIO on read): the file is left out, the rest is sent.
    write(repo, "docs/bad-sector.md", "unreadable\n")
    real_open, real_read = os.open, os.read
    failing: set[int] = set()

    def opening(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        fd = real_open(path, flags, *args, **kw)
        failing.discard(fd)  # a number reused once the bad file is closed
        if os.fspath(path).endswith("bad-sector.md"):
            failing.add(fd)
        return fd

    def reading(fd: int, n: int) -> bytes:
        if fd in failing:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_read(fd, n)

    monkeypatch.setattr(os, "open", opening)
    monkeypatch.setattr(os, "read", reading)
    r = run_against(cli, simulator, "-c", "docs")
    assert r.code == 0, r.err
    assert "docs/spec.md" in sent_text(simulator)
    assert "bad-sector" not in sent_text(simulator)
    assert summary_lines(r.err) == [
        "deepseek-review: left out 1 file (1 unreadable); --dry-run lists them"
    ]
