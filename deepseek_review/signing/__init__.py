"""Signed reviews: an in-toto Statement per segment, signed with an SSH key (sshsig).

``statement.py`` builds the Statement from a segment's files; ``sshsig.py`` signs and checks
with ``ssh-keygen -Y``; ``allowed.py`` reads git's allowed-signers format; ``keys.py`` finds
the key; ``segments.py`` writes a segment's two sidecars; ``hook.py`` is what
:mod:`deepseek_review.reviewing.segment` calls right after a receipt is written.
"""

NAMESPACE = "deepseek-review"
"""The sshsig namespace: a signature made for another purpose (git commits, files) never
verifies as a review's, nor the other way round."""
