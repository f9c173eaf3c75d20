"""A stdio MCP server for the tests: `python tests/support/mcp_servers/echo_stdio.py [options]`.

--name NAME      the server's name (its instructions name it too)
--pid-file PATH  write the process id there first
--gate PATH      do not serve until PATH exists (a server slow to start, as long as a test wants)
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from tools import build  # this file's directory leads sys.path when it runs as a script


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="echo")
    parser.add_argument("--pid-file")
    parser.add_argument("--gate")
    opts = parser.parse_args()
    if opts.pid_file:
        Path(opts.pid_file).write_text(str(os.getpid()))
    if opts.gate:
        while not Path(opts.gate).exists():
            time.sleep(0.02)
    build(opts.name).run("stdio")


if __name__ == "__main__":
    main()
