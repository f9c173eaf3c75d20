"""Command safety, in one place: which programs a command line runs (behind wrappers, shells,
`ssh`, git aliases), which of them the denylist refuses, which invocations are known to be
read-only, what the card warns about, and what an "always" answer covers.

The face the command tools use is `judge` and its `Decision` (`decision.py`); the modules
beside it are its parts. What keeps the user safe is the sandbox; this package decides who is
asked, and never calls a command safe because it failed to recognise it.
"""

# `decision.denylist` (the configured denylist, built once) is not re-exported: the policy's
# parts load when a command is first judged, and the submodule `denylist` then replaces a
# package attribute of that name; import it from `decision`.
from tether.command_policy.decision import (
    Command,
    Decision,
    is_read_only,
    judge,
    refuse_denylisted,
)

__all__ = [
    "Command",
    "Decision",
    "is_read_only",
    "judge",
    "refuse_denylisted",
]
