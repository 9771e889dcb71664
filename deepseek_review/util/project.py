"""The URIs this project names itself by: its home, its predicate types, its schemas' ``$id``.

:data:`HOME` is ``[project.urls] Homepage`` in ``pyproject.toml`` (a test keeps the two
equal): the package index page of the ``deepseek-review`` distribution, the one address the
project publishes under. Every URI the tool writes that names the tool (SARIF's
``informationUri``, in-toto ``predicateType``, the schemas' ``$id``) is under it; a change of
a predicate's shape is a new version (``.../v2``), never an edit.
"""

from __future__ import annotations

HOME = "https://pypi.org/project/deepseek-review/"
#: The predicate of a segment's own in-toto Statement (``<stem>.intoto.json``).
SIGNED_REVIEW = HOME + "predicate/signed-review/v1"
#: The predicate ``attest`` writes for ``actions/attest`` (many segments at once).
ATTESTED_REVIEWS = HOME + "predicate/attested-reviews/v1"
#: Where the schemas' ``$id`` live (a predicate's schema has its predicate type as ``$id``).
SCHEMAS = HOME + "schemas/"

#: Where the tool used to point, another repository's address: statements signed with
#: these predicate types still verify (their signature covers the type).
_FORMER = "https://github.com/allaunthefox/Research-Stack/shared-data/schemas/"
FORMER_SIGNED_REVIEW = _FORMER + "deepseek-review-signed-review-v1.schema.json"
