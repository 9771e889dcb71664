"""Ollama, understood: what its native API says before a review is sent (:mod:`.probe`),
and the refusal of a prompt it would silently cut (:mod:`.fit`)."""
