"""The allowed-signers file is read as ``ssh-keygen`` reads it (issue #29, item 13): every
option form, quoting, case, wildcard, negation, whitespace and malformed line of ssh-keygen's
ALLOWED SIGNERS format, decided by us and by the real ``ssh-keygen -Y verify`` side by side.

ssh-keygen's decision for a file: some principal ``P`` makes ``ssh-keygen -Y verify -I P``
accept the signature, ``P`` tried among the principal the line was written for, what
``ssh-keygen -Y find-principals`` names and the principal we name. Ours: the file read
(a :class:`ConfigError` refuses), a principal found for the signature's key, and the
signature checked, as ``verify --allowed-signers`` does."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from deepseek_review.errors import ConfigError
from deepseek_review.signing import allowed, sshsig
from tests.support.sshkeys import (
    HAVE_OPENSSL,
    Key,
    allowed_signers,
    make_key,
    needs_openssh,
    small_rsa_key,
)

# One worker runs the module, so its module-scoped fixture is built once.
pytestmark = [needs_openssh, pytest.mark.xdist_group("signing_allowed")]
P = "alice@example.com"
MESSAGE = b'{"_type": "https://in-toto.io/Statement/v1"}\n'


@dataclass(frozen=True)
class Signed:
    folder: Path
    key: Key
    rsa: Key
    other: Key
    sig: bytes
    rsa_sig: bytes

    def pub(self, which: Key | None = None) -> str:
        """``keytype base64`` of ``which`` (the signer's key)."""
        return " ".join((which or self.key).public.read_text().split()[:2])

    def blob(self, which: Key | None = None) -> str:
        return (which or self.key).public.read_text().split()[1]


def _sign(key: Key, namespace: str = "deepseek-review") -> bytes:
    return subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-n", namespace, "-f", str(key.private)],
        input=MESSAGE, capture_output=True, check=True,
    ).stdout  # fmt: skip


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    folder = tmp_path_factory.mktemp("allowed")
    key = make_key(folder / "k", "ed25519", P)
    rsa = make_key(folder / "r", "rsa", P)
    other = make_key(folder / "o", "ed25519", "mallory@example.com")
    return Signed(folder, key, rsa, other, _sign(key), _sign(rsa))


def ours(path: Path, sig: bytes) -> tuple[str | None, str]:
    """(principal, why): what ``verify --allowed-signers`` decides for ``sig``."""
    try:
        signers = allowed.read(path, str(path))
    except ConfigError as exc:
        return None, exc.message
    principal, why = allowed.principal_for(signers, sshsig.parse(sig).public_key,
                                           datetime.now(UTC))  # fmt: skip
    if principal is not None and sshsig.verify(
        MESSAGE, sig, allowed_signers=path, principal=principal
    ):
        return None, "the signature does not verify"
    return principal, why


def ssh_keygen(path: Path, sig: bytes, *principals: str) -> tuple[bool, list[str]]:
    """Whether ``ssh-keygen -Y verify`` accepts ``sig`` for any of ``principals`` or of the
    principals ``-Y find-principals`` names; and those it named."""
    sig_file = path.with_suffix(".sig")
    sig_file.write_bytes(sig)
    found = subprocess.run(
        ["ssh-keygen", "-Y", "find-principals", "-f", str(path), "-s", str(sig_file)],
        capture_output=True, text=True,
    )  # fmt: skip
    named = found.stdout.splitlines() if found.returncode == 0 else []
    for principal in dict.fromkeys([*principals, *named]):
        done = subprocess.run(
            ["ssh-keygen", "-Y", "verify", "-f", str(path), "-I", principal,
             "-n", "deepseek-review", "-s", str(sig_file)],
            input=MESSAGE, capture_output=True,
        )  # fmt: skip
        if done.returncode == 0:
            return True, named
    return False, named


def decide(signed: Signed, lines: list[str], *, rsa: bool = False) -> tuple[bool, bool, str]:
    """(we accept, ssh-keygen accepts, our principal or reason) for a file of ``lines``,
    ``{K}`` standing for the signer's public key, ``{O}`` for another key."""
    key = signed.rsa if rsa else signed.key
    sig = signed.rsa_sig if rsa else signed.sig
    text = [ln.format(K=signed.pub(key), B=signed.blob(key), O=signed.pub(signed.other))
            for ln in lines]  # fmt: skip
    path = signed.folder / "allowed_signers"
    path.write_text("".join(ln + "\n" for ln in text), encoding="utf-8")
    principal, why = ours(path, sig)
    theirs, _ = ssh_keygen(path, sig, P, *([principal] if principal else []))
    if principal is not None:  # the principal we name is one ssh-keygen accepts
        assert ssh_keygen(path, sig, principal)[0]
    return principal is not None, theirs, principal or why


ACCEPTED = {
    "plain": ["{P} {K}"],
    "plain with a comment after the key": ["{P} {K} alice's laptop, 2026"],
    "the issue's namespaces list": ['{P} namespaces="git,deepseek-review" {K}'],
    "namespaces, ours alone": ['{P} namespaces="deepseek-review" {K}'],
    "namespaces, ours last of three": ['{P} namespaces="git,file,deepseek-review" {K}'],
    "namespaces, a wildcard": ['{P} namespaces="deepseek-*" {K}'],
    "namespaces, a ? wildcard": ['{P} namespaces="deepseek?review" {K}'],
    "namespaces, star": ['{P} namespaces="*" {K}'],
    "namespaces, a negation then star": ['{P} namespaces="!git,*" {K}'],
    "NAMESPACES upper case": ['{P} NAMESPACES="deepseek-review" {K}'],
    "Namespaces mixed case": ['{P} Namespaces="git,deepseek-review" {K}'],
    "namespaces with an escaped quote": ['{P} namespaces="a\\"b,deepseek-review" {K}'],
    "namespaces with a space inside the quotes": ['{P} namespaces="a b,deepseek-review" {K}'],
    "an empty option before": ['{P} ,namespaces="deepseek-review" {K}'],
    "valid-after a date": ['{P} valid-after="20200101" {K}'],
    "valid-after Z": ['{P} valid-after="20200101Z" {K}'],
    "valid-after z": ['{P} valid-after="20200101z" {K}'],
    "valid-after UTC": ['{P} valid-after="20200101UTC" {K}'],
    "valid-after utc": ['{P} valid-after="20200101utc" {K}'],
    "valid-after with minutes": ['{P} valid-after="202001011230Z" {K}'],
    "valid-after with seconds": ['{P} valid-after="20200101123045Z" {K}'],
    "valid-before far ahead": ['{P} valid-before="29990101Z" {K}'],
    "VALID-BEFORE upper case": ['{P} VALID-BEFORE="29990101" {K}'],
    "valid-after and valid-before": ['{P} valid-after="20200101",valid-before="29990101" {K}'],
    "all three options": [
        '{P} namespaces="deepseek-review",valid-after="20200101Z",valid-before="29990101Z" {K}'
    ],
    "two principals, ours first": ["{P},bob@example.com {K}"],
    "two principals, ours second": ["bob@example.com,{P} {K}"],
    "another principal only (signed by bob)": ["bob@example.com {K}"],
    "a wildcard principal": ["*@example.com {K}"],
    "a ? principal": ["a?ice@example.com {K}"],
    "a negation then a wildcard": ["!bob@example.com,*@example.com {K}"],
    "a quoted principal": ['"{P}" {K}'],
    "quoted principals with a comma": ['"{P},bob@example.com" {K}'],
    "a quoted principal with a space": ['"alice smith" {K}'],
    "leading blanks": ["   \t{P} {K}"],
    "tabs between fields": ["{P}\t{K_TAB}"],
    "tabs around options": ['{P}\tnamespaces="deepseek-review"\t{K}'],
    "several spaces": ['{P}    namespaces="deepseek-review"    {K}'],
    "a CRLF line": ["{P} {K}\r"],
    "a comment and blank lines first": ["# who may sign", "", "   ", "  # indented", "{P} {K}"],
    "a line for another key first": ["bob@example.com {O}", "{P} {K}"],
    "a refused line, then an allowed one": ['{P} namespaces="git" {K}', "{P} {K}"],
    "an expired line, then a valid one": ['{P} valid-before="20200101Z" {K}', "{P} {K}"],
}

REFUSED = {
    "another key": ["{P} {O}"],
    "no line at all": ["# nobody"],
    "a commented-out line": ["#{P} {K}"],
    "namespaces, git only": ['{P} namespaces="git" {K}'],
    "namespaces, file only": ['{P} namespaces="file" {K}'],
    "namespaces, ours negated": ['{P} namespaces="!deepseek-review,*" {K}'],
    "namespaces, a negation alone": ['{P} namespaces="!git" {K}'],
    "namespaces, empty": ['{P} namespaces="" {K}'],
    "namespaces, another case": ['{P} namespaces="DeepSeek-Review" {K}'],
    "namespaces unquoted": ["{P} namespaces=deepseek-review {K}"],
    "namespaces in single quotes": ["{P} namespaces='deepseek-review' {K}"],
    "namespaces unbalanced": ['{P} namespaces="deepseek-review {K}'],
    "namespaces twice": ['{P} namespaces="git",namespaces="deepseek-review" {K}'],
    "namespaces with a space before =": ['{P} namespaces ="deepseek-review" {K}'],
    "expired": ['{P} valid-before="20200101Z" {K}'],
    "not yet valid": ['{P} valid-after="29990101" {K}'],
    "valid-after unquoted": ["{P} valid-after=20200101 {K}"],
    "valid-after with dashes": ['{P} valid-after="2020-01-01" {K}'],
    "valid-after, month 13": ['{P} valid-after="20201301" {K}'],
    "valid-after, ten digits": ['{P} valid-after="2020010112" {K}'],
    "valid-after, the epoch": ['{P} valid-after="19700101Z" {K}'],
    "valid-before before valid-after": ['{P} valid-after="20200101",valid-before="20100101" {K}'],
    "valid-before twice": ['{P} valid-before="29990101",valid-before="29980101" {K}'],
    "an unknown option": ["{P} foo {K}"],
    "an unknown option with a value": ['{P} foo="bar",namespaces="deepseek-review" {K}'],
    "a trailing comma": ['{P} namespaces="deepseek-review", {K}'],
    "cert-authority": ["{P} cert-authority {K}"],
    "CERT-AUTHORITY": ['{P} CERT-AUTHORITY,namespaces="deepseek-review" {K}'],
    "no-cert-authority": ["{P} no-cert-authority {K}"],
    "cert-authority with a suffix": ["{P} cert-authorityx {K}"],
    "ours negated as a principal": ["!{P} {K}"],
    "a principal alone": ["{P}"],
    "a key type without its key": ["{P} ssh-ed25519"],
    "a key that is not base64": ["{P} ssh-ed25519 not*base64!"],
    "a key of another type than named": ["{P} ssh-rsa {B}"],
    "an unknown key type": ["{P} ssh-foo {B}"],
    "an unbalanced quoted principal": ['"{P} {K}'],
}


def _expand(lines: list[str]) -> list[str]:
    return [ln.replace("{P}", P) for ln in lines]


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_a_line_ssh_keygen_accepts_is_accepted(signed: Signed, name: str) -> None:
    lines = [ln.replace("{K_TAB}", signed.pub().replace(" ", "\t")) for ln in ACCEPTED[name]]
    mine, theirs, said = decide(signed, _expand(lines))
    assert theirs, "ssh-keygen accepts this line (the table is wrong otherwise)"
    assert mine, said


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_line_ssh_keygen_refuses_is_refused(signed: Signed, name: str) -> None:
    mine, theirs, said = decide(signed, _expand(REFUSED[name]))
    assert not theirs, "ssh-keygen refuses this line (the table is wrong otherwise)"
    assert not mine, said


@pytest.mark.parametrize("key_type", ["ssh-rsa", "rsa-sha2-256", "rsa-sha2-512"])
def test_an_rsa_key_under_each_of_its_type_names_agrees(signed: Signed, key_type: str) -> None:
    mine, theirs, said = decide(signed, [f"{P} {key_type} {{B}}"], rsa=True)
    assert theirs
    assert mine, said


def test_a_principal_is_named_as_ssh_keygen_would_verify_it(signed: Signed) -> None:
    assert decide(signed, [f"!bob@example.com,{P},carol@example.com {{K}}"])[2] == P
    assert decide(signed, ["*@example.com {K}"])[2] == "*@example.com"


@pytest.mark.skipif(not HAVE_OPENSSL, reason="openssl makes the small RSA key")
def test_an_rsa_key_under_1024_bits_is_not_a_key(signed: Signed) -> None:
    """ssh-keygen reads such a line as ``invalid key`` (and refuses its signatures)."""
    small = small_rsa_key(signed.folder / "small", P)
    path = allowed_signers(signed.folder / "small_signers", small.allowed_line())
    with pytest.raises(ConfigError) as caught:
        allowed.read(path, "signers")
    assert caught.value.message == "signers:1: not a public key (keytype base64-key)"


@pytest.mark.parametrize("owner", ["bob@example.com", P])
def test_a_malformed_line_beside_a_good_one_is_an_error_naming_it(
    signed: Signed, owner: str
) -> None:
    """The one difference, on purpose: ssh-keygen logs ``allowed_signers:1: bad options``
    and reads on (so the good line still lets alice sign); we refuse the whole file, naming
    the line, rather than verify against a file that does not say what its author meant."""
    path = allowed_signers(
        signed.folder / "bad_beside", f"{owner} foo {signed.pub()}", f"{P} {signed.pub()}"
    )
    assert ssh_keygen(path, signed.sig, P)[0]
    with pytest.raises(ConfigError) as caught:
        allowed.read(path, "signers")
    assert caught.value.message == (
        "signers:1: unknown option 'foo' (cert-authority, namespaces, valid-after, valid-before)"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('namespaces="a",namespaces="b"', 'signers:1: more than one "namespaces" option'),
        ("namespaces=git", 'signers:1: namespaces needs a double-quoted value (namespaces="...")'),
        ('valid-after="2020"', "signers:1: bad time '2020' (YYYYMMDD[HHMM[SS]][Z])"),
        ('valid-after="2",valid-before="1"', "signers:1: bad time '2' (YYYYMMDD[HHMM[SS]][Z])"),
        ('namespaces="git",', "signers:1: the options end with a comma"),
        ('namespaces="git', "signers:1: unbalanced quotes"),
    ],
)
def test_a_malformed_option_is_one_line_naming_the_line(
    signed: Signed, line: str, message: str
) -> None:
    path = allowed_signers(signed.folder / "bad", f"{P} {line} {signed.pub()}")
    with pytest.raises(ConfigError) as caught:
        allowed.read(path, "signers")
    assert caught.value.message == message


def test_lines_are_numbered_as_newlines_count_them(signed: Signed) -> None:
    """A form feed or a U+2028 inside a line does not start a new one (ssh-keygen reads
    lines up to ``\\n`` only)."""
    path = signed.folder / "numbered"
    path.write_text(f"# one\x0c two\n# three\u2028four\n{P} foo {signed.pub()}\n")
    with pytest.raises(ConfigError) as caught:
        allowed.read(path, "signers")
    assert caught.value.message.startswith("signers:3: unknown option 'foo'")


@pytest.fixture
def time_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Set this process's ``TZ`` (and so ssh-keygen's); restored after."""

    def set_zone(zone: str) -> None:
        monkeypatch.setenv("TZ", zone)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    ("zone", "option", "at", "accepted"),
    [
        ("UTC", 'valid-after="20300101Z"', "20291231235959Z", False),
        ("UTC", 'valid-after="20300101Z"', "20300101000000Z", True),
        ("UTC", 'valid-before="20300101Z"', "20300101000000Z", True),
        ("UTC", 'valid-before="20300101Z"', "20300101000001Z", False),
        ("Asia/Tokyo", 'valid-after="20300101"', "20291231145959Z", False),
        ("Asia/Tokyo", 'valid-after="20300101"', "20291231150000Z", True),
        # local time is read without daylight saving, as ssh-keygen's mktime reads it
        ("America/New_York", 'valid-after="20300701"', "20300701045959Z", False),
        ("America/New_York", 'valid-after="20300701"', "20300701050000Z", True),
        ("America/New_York", 'valid-before="203007011200"', "20300701170000Z", True),
        ("America/New_York", 'valid-before="203007011200"', "20300701170001Z", False),
    ],
)
def test_validity_is_decided_to_the_second_as_ssh_keygen_decides_it(
    signed: Signed,
    time_zone: Callable[[str], None],
    zone: str,
    option: str,
    at: str,
    accepted: bool,
) -> None:
    time_zone(zone)
    path = allowed_signers(signed.folder / "timed", f"{P} {option} {signed.pub()}")
    sig_file = signed.folder / "timed.sig"
    sig_file.write_bytes(signed.sig)
    theirs = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(path), "-I", P, "-n", "deepseek-review",
         "-s", str(sig_file), "-O", f"verify-time={at}"],
        input=MESSAGE, capture_output=True,
    ).returncode == 0  # fmt: skip
    now = datetime.strptime(at, "%Y%m%d%H%M%SZ").replace(tzinfo=UTC)
    principal, why = allowed.principal_for(
        allowed.read(path, "signers"), sshsig.parse(signed.sig).public_key, now
    )
    assert theirs is accepted
    assert (principal is not None) is accepted, why
