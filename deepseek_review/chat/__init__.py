"""Calling a chat endpoint: one client, the wire formats, bounded reads, deadline, retry,
endpoint."""
