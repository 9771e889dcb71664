"""Which reviews count: the trust rule, and what is built only from trusted reviews (attest,
signing existing reviews).
"""
