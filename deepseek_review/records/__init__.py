"""The on-disk contract: what a review leaves in its folder, and the one way to read it back.

A segment of a review is a set of files sharing a *stem* (:mod:`.naming`): the answer
``<stem>.md``, its receipt ``<stem>.receipt.json`` (:mod:`.receipt`, the frozen schema), its
request record ``<stem>.request.json`` (:mod:`.request_record`, whose message contents hold
``$parts`` (:mod:`.parts`) that rebuild the exact request bytes (:mod:`.rebuild`)) and, when
kept, ``<stem>.reasoning.md``. Hashes and request bodies use one canonical JSON encoding
(:mod:`.canonical`). :mod:`.index` finds chains of segments from their receipts for
``show``, ``continue``, batch resume and ``verify`` alike.

Nothing is imported here: each caller imports the module it needs (verify must not pay for
what a review needs, and the other way round).
"""
