"""A session's MCP servers: connected in the background with the official SDK (`mcp`), their
tools offered as `mcp__<server>__<tool>`, their instructions put in the system prompt.

Only `host.py` is imported with a session that has servers; the SDK itself (and
`connection.py`, `results.py`, which use it) is imported on a worker thread when the first
server starts, so neither startup nor a session without servers pays for it.
"""
