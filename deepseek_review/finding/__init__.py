"""Findings that CI can act on: extracted from a review's answer, anchored, exported.

(Named ``finding``, not ``findings``: a submodule named like the library call
:func:`deepseek_review.findings` would replace it in the package namespace when imported.)

``extract`` finds and validates the findings block of a stitched answer; ``anchor`` places
each finding on lines that exist in the reviewed version (found by its quote: ``quote``; or
demotes it, never moves it); ``fingerprint`` gives it an identity from content, ``baseline``
compares it with an earlier run's; ``derive`` does this for stored chains
and folders; ``sarif``, ``rdjson``, ``github``, ``markdown`` and ``export`` write them out;
``sidecar`` is ``run --findings``'s file beside the last segment and ``verify``'s check of it.
"""
