"""Every URI the tool writes that names the tool is this project's: its home
(``[project.urls] Homepage``), the predicate types under it with a version, SARIF's
``informationUri`` and ``tool.driver.version``; statements signed with the former predicate
type still verify."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from deepseek_review._version import __version__
from deepseek_review.finding.derive import Collected
from deepseek_review.finding.sarif import to_sarif
from deepseek_review.signing.statement import PREDICATE_TYPE
from deepseek_review.trust.attest import ATTEST_PREDICATE_TYPE
from deepseek_review.util import project
from tests.support.cli import review
from tests.support.sshkeys import Key, allowed_signers, make_key, needs_openssh

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
FORMER_HOST = "allaunthefox/Research-Stack"
#: The receipt schema is the frozen seed: its bytes, ``$id`` included, never change.
RECEIPT_SCHEMA = "deepseek-review-receipt.schema.json"


def test_the_home_is_the_projects_homepage_in_pyproject():
    assert PYPROJECT["project"]["urls"]["Homepage"] == project.HOME
    assert project.HOME.startswith("https://")


def test_sarif_names_this_project_and_its_version():
    driver = to_sarif(Collected())["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == project.HOME
    assert driver["version"] == __version__ == PYPROJECT["project"]["version"]


@pytest.mark.parametrize("uri", [PREDICATE_TYPE, ATTEST_PREDICATE_TYPE])
def test_each_predicate_type_is_under_the_home_with_a_version(uri):
    assert uri.startswith(project.HOME + "predicate/")
    assert uri.rsplit("/", 1)[-1] == "v1"


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "schemas").glob("*.json")))
def test_each_of_our_schemas_ids_is_under_the_home(name):
    schema = json.loads((ROOT / "schemas" / name).read_text(encoding="utf-8"))
    if name.startswith("in-toto-"):
        assert schema["$id"] == "https://in-toto.io/Statement/v1"  # the spec's own
    elif name == RECEIPT_SCHEMA:
        assert FORMER_HOST in schema["$id"]  # frozen, byte for byte (test_packaging)
    elif "$id" in schema:
        assert schema["$id"].startswith(project.HOME)


@pytest.mark.parametrize(
    ("name", "uri"),
    [("deepseek-review-signed-review-v1.schema.json", PREDICATE_TYPE),
     ("deepseek-review-attested-reviews-v1.schema.json", ATTEST_PREDICATE_TYPE)],
)  # fmt: skip
def test_a_predicates_schema_has_its_type_as_id(name, uri):
    assert json.loads((ROOT / "schemas" / name).read_text(encoding="utf-8"))["$id"] == uri


def test_nothing_shipped_points_at_the_former_address_but_what_must_keep_it():
    shipped = [*(ROOT / "deepseek_review").rglob("*.py"), *(ROOT / "schemas").glob("*.json")]
    shipped += [*(ROOT / "prompts").rglob("*"), ROOT / "pyproject.toml"]
    naming = sorted(
        str(p.relative_to(ROOT))
        for p in shipped
        if p.is_file() and FORMER_HOST in p.read_text(encoding="utf-8")
    )
    assert naming == ["deepseek_review/util/project.py", f"schemas/{RECEIPT_SCHEMA}"]


def test_the_readme_documents_the_predicates_fields():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/reference/predicates.md)" in readme
    doc = (ROOT / "docs" / "reference" / "predicates.md").read_text(encoding="utf-8")
    for uri in (PREDICATE_TYPE, ATTEST_PREDICATE_TYPE):
        assert f"## `{uri}`" in doc
    schema = json.loads(
        (ROOT / "schemas" / "deepseek-review-signed-review-v1.schema.json").read_text()
    )
    for field in [*schema["properties"], "reviews", "subject"]:
        assert f"`{field}`" in doc


# --------------------------------------------------------------- the former type still verifies


@pytest.fixture
def alice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Key:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return make_key(tmp_path / "keys", "ed25519", "alice@example.com")


def resigned_as(repo: Path, key: Key, predicate_type: str) -> None:
    """The one segment's statement rewritten with ``predicate_type`` and signed again, as
    an earlier version (or a forger with the key) would have written it."""
    (statement,) = (repo / "reviews").glob("*.intoto.json")
    data: dict[str, Any] = json.loads(statement.read_text(encoding="utf-8"))
    data["predicateType"] = predicate_type
    statement.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    signature = statement.with_name(statement.name + ".sig")
    signed = subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-n", "deepseek-review", "-f", str(key.private)],
        input=statement.read_bytes(), capture_output=True, check=True,
    )  # fmt: skip
    signature.write_bytes(signed.stdout)


@needs_openssh
def test_a_statement_of_the_former_predicate_type_still_verifies_and_is_attested(
    repo, cli, simulator, tmp_path, alice, monkeypatch
):
    assert review(cli, simulator, "--sign", "--signing-key", str(alice.private)).code == 0
    resigned_as(repo, alice, project.FORMER_SIGNED_REVIEW)
    signers = allowed_signers(tmp_path / "a", alice.allowed_line())
    v = cli("verify", "--allowed-signers", str(signers), "--json")
    assert v.code == 0, v.err
    (check,) = [c for c in v.json()["receipts"][0]["checks"] if c["name"] == "signature"]
    assert check["status"] == "ok"
    monkeypatch.setenv("DEEPSEEK_REVIEW_ALLOWED_SIGNERS", str(signers))
    out = tmp_path / "pred.json"
    a = cli("attest", "reviews", "--output", str(out))
    assert a.code == 0, a.err
    assert a.out.strip() == ATTEST_PREDICATE_TYPE
    assert len(json.loads(out.read_text())["reviews"]) == 1


@needs_openssh
@pytest.mark.parametrize(
    "other",
    ["https://example.com/predicate/v1", project.FORMER_SIGNED_REVIEW.replace("v1", "v2"), ""],
)
def test_a_statement_of_any_other_predicate_type_fails(
    repo, cli, simulator, tmp_path, alice, other
):
    assert review(cli, simulator, "--sign", "--signing-key", str(alice.private)).code == 0
    resigned_as(repo, alice, other)
    signers = allowed_signers(tmp_path / "a", alice.allowed_line())
    v = cli("verify", "--allowed-signers", str(signers), "--json")
    assert v.code == 9
    (check,) = [c for c in v.json()["receipts"][0]["checks"] if c["name"] == "signature"]
    assert check["detail"].endswith(f"predicateType is not {PREDICATE_TYPE}")
