"""Every exported location is a file inside the repository: repository-relative, normalised,
never under ``.git``, and in SARIF a percent-encoded URI relative to ``%SRCROOT%``, whatever
path a model, a crafted request record or a planted diff header names."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlparse

import pytest

from deepseek_review.finding.anchor import Reviewed, anchor
from deepseek_review.finding.derive import Collected, ReviewFindings
from deepseek_review.finding.export import render
from deepseek_review.finding.hunks import Hunk, NewSide, change_in
from deepseek_review.finding.hunks import unquote as unquote_path
from deepseek_review.finding.location import repo_path, sarif_uri
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.naming import sibling
from tests.support.findings import (
    PROSE_END,
    assert_valid_rdjson,
    assert_valid_rdjsonl,
    assert_valid_sarif,
    at,
    block,
    chat_reply,
    diff_review,
    finding,
    item,
    sources_of,
    two_commits,
)

REVIEW = "reviews/r.md"
ATTACKS = [
    "/etc/passwd",
    "//etc/passwd",
    "../../../etc/shadow",
    "src/../../etc/passwd",
    "https://evil/x",
    "file:///etc/passwd",
    "C:/Windows/win.ini",
    "..\\..\\etc\\passwd",
    ".git/config",
    "src/.GIT/hooks/pre-commit",
    ".git./config",
    "src/a.py\n::error file=x::y",
    "\x1b]8;;https://evil\x07",
]
FORMATS = ["sarif", "rdjson", "rdjsonl", "github", "markdown", "patch"]
GENUINE = [
    "src/a b.py",
    "src/a#b?c.py",
    "src/100%.py",
    "src/%2e%2e/%2e%2e/passwd",
    "src/ünïcødé/ファイル.py",
    "src/a;b=c&d+e,f@g!h$i'j(k)l*.py",
    "src/x:y.py",
    "src/~tilde.py",
]


def in_a_hunk(path: str, suggestion: str | None = None) -> Collected:
    """One finding on ``path``, whose change (as a diff review's record could claim it) has
    a hunk holding its lines: without the rule, it would be anchored there."""
    change = NewSide({path: [Hunk(1, ("a = 1", "b = 2"))]})
    f = finding(path=path, start_line=1, end_line=2, suggestion=suggestion)
    found = anchor([f], Reviewed({}, {}, change), REVIEW)
    return Collected([ReviewFindings(REVIEW, (), tuple(found))], found, [])


def on_its_file(path: str) -> Collected:
    """One finding anchored on the lines of a context file named ``path``."""
    f = finding(path=path, start_line=1, end_line=1, quote="x = 1", suggestion="x = 2\n")
    found = anchor([f], Reviewed({path: "x = 1\n"}, {}), REVIEW)
    review = ReviewFindings(REVIEW, (), tuple(found), {}, sources_of({path: "x = 1\n"}))
    return Collected([review], found, [])


def sarif_files(log: dict[str, Any]) -> list[str]:
    """Every file a SARIF log points at (results' locations and fixes), resolved against a
    checkout at /repo/ as a SARIF reader does, and decoded."""
    base = "file:///repo/"
    out = []
    for result in log["runs"][0]["results"]:
        places = [loc["physicalLocation"]["artifactLocation"] for loc in result["locations"]]
        changes = [c for fix in result.get("fixes", ()) for c in fix["artifactChanges"]]
        places += [c["artifactLocation"] for c in changes]
        for place in places:
            assert place["uriBaseId"] == "%SRCROOT%"
            resolved = urlparse(urljoin(base, place["uri"]))
            assert (resolved.scheme, resolved.netloc, resolved.query, resolved.fragment) == (
                "file", "", "", "",
            )  # fmt: skip
            out.append(unquote(resolved.path, errors="strict").removeprefix("/repo/"))
    return out


def github_file(value: str) -> str:
    return value.replace("%3A", ":").replace("%2C", ",").replace("%0A", "\n").replace("%25", "%")


def exported_files(collected: Collected, fmt: str) -> list[str]:
    return files_in(render(collected, fmt), fmt)


def files_in(text: str, fmt: str) -> list[str]:
    """The files an export points its findings at, as its reader would take them; each
    export valid against its published schema."""
    if fmt == "sarif":
        log = json.loads(text)
        assert_valid_sarif(log)
        return sarif_files(log)
    if fmt in ("rdjson", "rdjsonl"):
        if fmt == "rdjson":
            assert_valid_rdjson(json.loads(text))
            diagnostics = json.loads(text)["diagnostics"]
        else:
            assert_valid_rdjsonl(text)
            diagnostics = [json.loads(line) for line in text.splitlines()]
        return [d["location"]["path"] for d in diagnostics if "location" in d]
    if fmt == "patch":  # the new side of each file: what git apply writes
        return [unquote_path(line[4:])[2:] for line in text.splitlines() if line[:4] == "+++ "]
    if fmt == "github":
        props = [re.match(r"::\w+ ([^:]*)::", line) for line in text.splitlines()]
        pairs = [p.split("=", 1) for m in props if m for p in m.group(1).split(",")]
        return [github_file(v) for k, v in pairs if k == "file"]
    table = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    rows = [line.split(" | ") for line in table]
    cells = [html.unescape(row[1]).replace("\\", "") for row in rows[1:]]  # as rendered
    return [re.sub(r"(:[0-9-]+| \(unanchored.*)$", "", cell) for cell in cells]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("path", ATTACKS)
def test_a_path_outside_the_repository_is_never_an_exported_location(fmt, path):
    shown = exported_files(in_a_hunk(path, suggestion="x\n"), fmt)
    assert shown == ([] if fmt == "patch" else [REVIEW])  # a patch never changes the review


@pytest.mark.parametrize("path", ATTACKS)
def test_a_finding_on_a_path_outside_is_kept_on_its_review_saying_why(path):
    (a,) = in_a_hunk(path).findings
    assert (a.level, a.where) == ("review", REVIEW)
    assert "is not a location inside the repository" in a.reason


@pytest.mark.parametrize("path", ATTACKS)
def test_no_fix_targets_a_path_outside(path):
    log = json.loads(render(in_a_hunk(path, suggestion="root::0:0::/:/bin/sh\n"), "sarif"))
    assert "fixes" not in log["runs"][0]["results"][0]
    rd = json.loads(render(in_a_hunk(path, suggestion="x\n"), "rdjson"))
    assert "suggestions" not in rd["diagnostics"][0]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_review_file_outside_the_repository_leaves_the_finding_on_no_file(fmt):
    f = finding(path="src/other.py")
    found = anchor([f], Reviewed({}, {}), "/etc/passwd")
    collected = Collected([ReviewFindings("/etc/passwd", (), tuple(found))], found, [])
    shown = exported_files(collected, fmt)
    assert shown == (["(no file)"] if fmt == "markdown" else [])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("path", GENUINE)
def test_a_genuine_path_is_exported_as_that_file(fmt, path):
    """Anchored on its lines (SARIF names it twice: the result and its fix)."""
    assert exported_files(on_its_file(path), fmt) == [path] * (2 if fmt == "sarif" else 1)


@pytest.mark.parametrize("path", GENUINE)
def test_a_sarif_uri_is_percent_encoded_per_rfc_3986(path):
    uri = sarif_uri(path)
    assert re.fullmatch(r"(?:[A-Za-z0-9\-._~/]|%[0-9A-F]{2})+", uri), uri
    assert unquote(uri, errors="strict") == path


@pytest.mark.parametrize(
    ("given", "shown"),
    [("./src//a.py", "src/a.py"), ("src/./a.py/", "src/a.py"), ("a.py", "a.py"),
     ("src/.github/x.yml", "src/.github/x.yml"), ("src/..a/b", "src/..a/b")],
)  # fmt: skip
def test_a_location_is_normalised(given, shown):
    assert repo_path(given) == shown


@pytest.mark.parametrize("path", [*ATTACKS, "", ".", "./", "src/\ud800.py"])
def test_a_location_outside_is_refused(path):
    assert repo_path(path) is None


def test_a_planted_diff_header_is_not_a_location():
    """``+++ b//etc/passwd`` in the framed patch a record hashes: its hunk is parsed, but a
    finding on it is shown on the review, and its fix is not exported."""
    framed = (
        b"## Change from a to b\n\n```diff\n"
        b"diff --git a//etc/passwd b//etc/passwd\n--- a//etc/passwd\n+++ b//etc/passwd\n"
        b"@@ -1 +1,2 @@\n root:x:0:0::/root:/bin/sh\n+evil::0:0::/:/bin/sh\n```\n"
    )
    git = {"diff": {"bytes": len(framed), "sha256": sha256_tag(framed), "shown": []}}
    change = change_in(git, [framed.decode()])
    assert change is not None and "/etc/passwd" in change.hunks
    f = finding(path="/etc/passwd", start_line=2, end_line=2, suggestion="x\n")
    found = anchor([f], Reviewed({}, {}, change), REVIEW)
    collected = Collected([ReviewFindings(REVIEW, (), tuple(found))], found, [])
    log = json.loads(render(collected, "sarif"))
    assert sarif_files(log) == [REVIEW]


@pytest.mark.parametrize("fmt", ["sarif", "rdjson", "github", "markdown"])
@pytest.mark.parametrize("shown", ["/etc/passwd", "../../etc/shadow", ".git/config", "https://e/x"])
def test_a_crafted_records_shown_paths_never_reach_an_export(repo, cli, make_stub, fmt, shown):
    run = diff_review(cli, make_stub, two_commits(repo), at(2, 3, path=shown))
    answer = run.json()["segments"][-1]["answer_path"]
    record_path = repo / sibling(answer, "record")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    record["git"]["diff"]["shown"].append(shown)
    record_path.write_text(json.dumps(record), encoding="utf-8")
    got = cli("findings", answer, "--format", fmt)
    assert got.code == 0, got.err
    assert files_in(got.out, fmt) == [answer]
    assert "1 finding(s) name a location outside the repository" in got.err
    assert got.err.count("outside the repository") == 1


def test_a_real_file_with_an_awkward_name_is_read_back_from_its_sarif_uri(repo, cli, make_stub):
    name = "src/a b#c?d%25 ünï.py"
    (repo / name).write_text("x = 1\n", encoding="utf-8")
    quoted = item(path=name, start_line=1, end_line=1, quote="x = 1", suggestion="x = 2\n")
    found = PROSE_END + block(quoted)
    stub = make_stub([chat_reply(found)])
    run = cli(
        "run", "--template", "code-review", "-c", name, "-p", "Review.",
        "--endpoint", stub.base_url, "--retry-wait", "0.01", "--json",
    )  # fmt: skip
    assert run.code == 0, run.err
    got = cli("findings", run.json()["segments"][-1]["answer_path"], "--format", "sarif")
    assert got.code == 0, got.err
    base = repo.as_uri() + "/"
    for uri in {a["uri"] for a in _artifacts(json.loads(got.out))}:
        resolved = urlparse(urljoin(base, uri))
        assert Path(unquote(resolved.path, errors="strict")) == repo / name
    assert got.err.count("outside the repository") == 0


def _artifacts(log: dict[str, Any]) -> list[dict[str, str]]:
    (result,) = log["runs"][0]["results"]
    assert result["properties"]["anchor"] == "line"
    fixes = [c["artifactLocation"] for f in result["fixes"] for c in f["artifactChanges"]]
    return [result["locations"][0]["physicalLocation"]["artifactLocation"], *fixes]


def test_a_path_that_is_no_context_file_keeps_its_reason_so_old_findings_files_rederive():
    """Findings files written before this rule hold this reason: re-deriving them in
    ``verify`` must give the same bytes."""
    (a,) = anchor([finding(path="/src/pkg/mean.py")], Reviewed({}, {}), REVIEW)
    assert (a.level, a.reason) == (
        "review",
        "/src/pkg/mean.py is not one of the review's context files",
    )
    assert a.where == REVIEW
