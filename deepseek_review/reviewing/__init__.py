"""One review from plan to answer: the plan, the prompt, the request body, the job, continuations,
segments.
"""
