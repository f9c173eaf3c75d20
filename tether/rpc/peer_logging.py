"""Logging setup: logs go to stderr, never stdout (stdout carries protocol frames only)."""

from __future__ import annotations

import sys


def configure_logging(level: str = "WARNING") -> None:
    import logging

    logging.basicConfig(
        stream=sys.stderr,
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
