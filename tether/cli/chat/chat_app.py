"""The chat's entry point (built in full by the chat's own modules)."""

from __future__ import annotations

import argparse
import sys

from tether.cli import exit_codes


def run_chat(args: argparse.Namespace) -> int:
    del args
    print("tether: the terminal chat is not built yet; use `tether -p PROMPT`", file=sys.stderr)
    return exit_codes.USAGE
