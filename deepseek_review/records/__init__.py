"""The on-disk contract: what a review leaves in its folder, and the one way to read it back.

A segment of a review is a set of files sharing a *stem*; :mod:`.naming` holds the table of
the files a segment owns (answer ``<stem>.md``, receipt, request record, reasoning: a new
sidecar is one more row) and the naming rules. :mod:`.receipt` is the frozen receipt schema
and its one parser; :mod:`.request_record` the typed request record (its JSON Schemas are
``schemas/deepseek-review-request-record-v<N>.schema.json``), whose message contents hold
``$parts`` (:mod:`.parts`, the one parser; a file's lines cut by :mod:`.lines`) that rebuild
the exact request bytes
(:mod:`.rebuild`: the reference, and verify's fast path inside it). :mod:`.canonical` is the
one canonical JSON encoding and the strict readers. :mod:`.stored` loads a segment (receipt
and record); :mod:`.index` finds chains of segments from their receipts (owners,
continuations, forks, loops) for ``show``, ``continue``, batch resume and ``verify`` alike.

Nothing is imported here: each caller imports the module it needs (verify needs little of
what a review needs, and the other way round).
"""
