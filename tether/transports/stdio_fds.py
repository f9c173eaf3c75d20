"""Claiming fds 0/1 for the protocol, importable before the event loop exists."""

from __future__ import annotations

import os
import sys


def claim_stdio() -> tuple[int, int]:
    """Take fds 0/1 for the protocol and return private duplicates (input_fd, output_fd).

    Afterwards fd 1 points at stderr and fd 0 at the null device, so a stray print() or an
    inherited child process can neither corrupt nor steal protocol bytes."""
    in_fd, out_fd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return in_fd, out_fd
