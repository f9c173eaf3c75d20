"""tether: a coding agent that editors drive over the Agent Client Protocol."""

# The one place the version is written (pyproject.toml reads it; tests/repo/test_release.py checks
# that the registry entry and CHANGELOG.md agree).
__version__ = "0.1.0"
