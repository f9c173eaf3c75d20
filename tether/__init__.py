"""tether: a coding agent that editors drive over the Agent Client Protocol."""

__version__ = "0.1.0"
