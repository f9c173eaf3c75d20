"""`tether acp | ask`: the command line. Imports stay inside each command so `tether acp`
reaches its first answer without loading what it does not need yet."""

from __future__ import annotations

import sys


def _parser():  # type: ignore[no-untyped-def]
    import argparse

    from tether import __version__

    p = argparse.ArgumentParser(prog="tether", description="A coding agent for editors, over ACP.")
    p.add_argument("--version", action="version", version=f"tether {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    acp = sub.add_parser(
        "acp", help="serve the Agent Client Protocol on stdio (editors spawn this)"
    )
    _server_flags(acp)
    acp.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")

    ask = sub.add_parser("ask", help="run one prompt headlessly through a spawned `tether acp`")
    ask.add_argument("prompt", help="what to ask the agent")
    ask.add_argument("--cwd", default=".", help="project directory (default: the current one)")
    policy = ask.add_mutually_exclusive_group()
    policy.add_argument("--yes", action="store_true", help="allow every permission request")
    policy.add_argument("--no", action="store_true", help="reject every permission request")
    ask.add_argument("--json", action="store_true", help="print the agent's raw frames (NDJSON)")
    ask.add_argument("--mode", choices=["ask", "code"], help="session mode to use")
    _server_flags(ask)
    return p


def _server_flags(p) -> None:  # type: ignore[no-untyped-def]
    p.add_argument(
        "--framing",
        choices=["auto", "ndjson", "content-length"],
        default="auto",
        help="wire framing (default: detected from the client's first byte)",
    )
    p.add_argument("--script", help="a scripted-provider file to use as the model")
    p.add_argument(
        "--max-frame-bytes", type=int, default=64 * 1024 * 1024, help="largest accepted frame"
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "acp":
        from tether.rpc.acp.serve import ServeOptions, serve_stdio
        from tether.rpc.peer_logging import configure_logging

        configure_logging(args.log_level)
        return serve_stdio(
            ServeOptions(framing=args.framing, script=args.script, max_frame=args.max_frame_bytes)
        )
    from tether.rpc.acp.headless import AskOptions, run_ask

    return run_ask(
        AskOptions(
            prompt=args.prompt,
            cwd=args.cwd,
            policy="yes" if args.yes else "no" if args.no else "ask",
            json=args.json,
            mode=args.mode,
            framing=args.framing,
            script=args.script,
        )
    )
