"""`tether acp | lsp | ask | config | doctor`: the command line. Imports stay inside each command,
and `tether acp` and `tether lsp` parse their few flags without argparse, so they reach their first
answer without loading what they do not need yet."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (startup time)
if TYPE_CHECKING:
    import argparse

_ACP_FLAGS = {
    "--framing": "framing",
    "--script": "script",
    "--model": "model",
    "--max-frame-bytes": "max_frame",
    "--log-level": "log_level",
    "--max-rounds": "max_rounds",
    "--max-retry-seconds": "max_retry_seconds",
}
_FRAMINGS = ("auto", "ndjson", "content-length")
_LSP_FLAGS = {
    "--script": "script",
    "--model": "model",
    "--max-frame-bytes": "max_frame",
    "--log-level": "log_level",
}


def _parser() -> argparse.ArgumentParser:
    import argparse

    from tether import __version__

    p = argparse.ArgumentParser(
        prog="tether",
        description="A coding agent for editors, over ACP. Alone on a terminal: a chat in the "
        "current folder; with -p: one prompt, headless (as `tether ask`).",
    )
    p.add_argument("--version", action="version", version=f"tether {__version__}")
    p.add_argument(
        "-p",
        "--print",
        dest="print_prompt",
        nargs="?",
        const="-",
        metavar="PROMPT",
        help="run one prompt headlessly and print the result (as `tether ask`; - or none: stdin)",
    )
    _session_flags(p)
    sub = p.add_subparsers(dest="command")

    acp = sub.add_parser(
        "acp", help="serve the Agent Client Protocol on stdio (editors spawn this)"
    )
    _server_flags(acp)
    acp.add_argument(
        "--max-frame-bytes", type=int, default=64 * 1024 * 1024, help="largest accepted frame"
    )

    lsp = sub.add_parser(
        "lsp", help="serve the agent as a language server on stdio (any LSP client, no plugin)"
    )
    lsp.add_argument("--script", help="a scripted-provider file to use as the model")
    lsp.add_argument("--model", help="the default model, as provider:model")
    lsp.add_argument("--log-level", help="DEBUG, INFO, WARNING or ERROR (as for `tether acp`)")
    lsp.add_argument(
        "--max-frame-bytes", type=int, default=64 * 1024 * 1024, help="largest accepted frame"
    )

    ask = sub.add_parser("ask", help="run one prompt headlessly through a spawned `tether acp`")
    ask.add_argument(
        "prompt",
        nargs="?",
        help="what to ask the agent (- or none: standard input; piped input after a prompt is "
        "added to it as context)",
    )
    _session_flags(ask)

    config = sub.add_parser("config", help="show or create the config file")
    config_sub = config.add_subparsers(dest="config_command", metavar="{path,init,edit}")
    config_sub.add_parser("path", help="print the config file's path (TETHER_CONFIG overrides it)")
    init = config_sub.add_parser("init", help="write a commented example config file")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    show = config_sub.add_parser(
        "show", help="print the settings in effect, each with where it came from"
    )
    show.add_argument("--json", action="store_true", help="print them as JSON")
    show.add_argument("--cwd", default=".", help="the project whose file applies (default: .)")
    show.add_argument("--model", help="the default model to assume (as `tether ask --model`)")
    config_sub.add_parser(
        "edit",
        help="open the config file in $VISUAL / $EDITOR (created from the example when missing), "
        "then check it",
    )

    sessions = sub.add_parser("sessions", help="list, show, export or delete stored sessions")
    sessions_sub = sessions.add_subparsers(
        dest="sessions_command", metavar="{list,show,export,delete}"
    )
    listing = sessions_sub.add_parser("list", help="newest first")
    listing.add_argument("--cwd", help="only sessions of this project directory")
    listing.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    for name, what in (("show", "print a session as Markdown"), ("delete", "delete a session")):
        sessions_sub.add_parser(name, help=what).add_argument("session_id")
    export = sessions_sub.add_parser("export", help="write a session as Markdown or JSON")
    export.add_argument("session_id")
    export.add_argument("--format", choices=["markdown", "json"], default="markdown")
    export.add_argument("-o", "--output", help="file to write (default: standard output)")

    doctor = sub.add_parser(
        "doctor", help="check the config file, list providers and models, optionally probe them"
    )
    doctor.add_argument(
        "--probe", action="store_true", help="send one tiny streamed request to each provider"
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.add_argument("--model", help="the default model to assume (as `tether acp --model`)")
    doctor.add_argument(
        "--move-damaged-store",
        action="store_true",
        help="move a damaged session database aside (kept, renamed) so a new one is made",
    )
    return p


def _session_flags(p: argparse.ArgumentParser) -> None:
    """What `tether ask`, `tether -p` and the chat (`tether` alone) share."""
    p.add_argument("--cwd", default=".", help="project directory (default: the current one)")
    policy = p.add_mutually_exclusive_group()
    policy.add_argument("--yes", action="store_true", help="allow every permission request")
    policy.add_argument("--no", action="store_true", help="reject every permission request")
    p.add_argument(
        "--output-format",
        choices=["text", "json", "stream-json"],
        default="text",
        help="text: the answer on stdout, the rest on stderr; json: one result object; "
        "stream-json: one event per line (docs/cli.md)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="for debugging: print the raw ACP frames (NDJSON) instead of the output format",
    )
    from tether.engine.sessions.modes import MODES  # the engine's list, not a copy

    p.add_argument("--mode", choices=list(MODES), help="session mode to use")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="print the answer only: no thinking, tool, plan, notice or usage lines",
    )
    resume = p.add_mutually_exclusive_group()
    resume.add_argument(
        "-c",
        "--continue",
        dest="continue_last",
        action="store_true",
        help="continue the last session of this folder",
    )
    resume.add_argument("-r", "--resume", metavar="ID", help="continue the session with this id")
    _server_flags(p)


def _server_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--framing",
        choices=list(_FRAMINGS),
        default="auto",
        help="wire framing (default: detected from the client's first byte)",
    )
    p.add_argument("--script", help="a scripted-provider file to use as the model")
    p.add_argument("--model", help="the default model, as provider:model (overrides TETHER_MODEL)")
    p.add_argument(
        "--log-level",
        help="DEBUG, INFO, WARNING or ERROR: the log file's level (default: TETHER_LOG_LEVEL, "
        "else INFO); when given, the log goes to stderr too",
    )
    p.add_argument(
        "--max-rounds",
        type=_positive,
        help="model rounds per turn before the user is asked to continue (over [agent] max_rounds)",
    )
    p.add_argument(
        "--auto-continue",
        action="store_true",
        help="go past the round and PTY limits without asking (as [agent] auto_continue_limits)",
    )
    p.add_argument(
        "--max-retry-seconds",
        type=_seconds,
        metavar="N",
        help="give up retrying a failed model request after N seconds in all "
        "(over [agent] retry_max_total)",
    )


def _positive(text: str) -> int:
    import argparse

    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return int(text)


def _seconds(text: str) -> int:
    import argparse

    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of seconds, not {text!r}")
    return int(text)


def _fast_acp_args(argv: list[str]) -> dict[str, str] | None:
    """`tether acp --flag value ...` without argparse; None when argparse must decide."""
    if not argv or argv[0] != "acp":
        return None
    found: dict[str, str] = {}
    if "--auto-continue" in argv:  # the one flag without a value
        argv = [a for a in argv if a != "--auto-continue"]
        found["auto_continue"] = "1"
    if len(argv) % 2 == 0:
        return None
    for flag, value in zip(argv[1::2], argv[2::2], strict=True):
        if flag not in _ACP_FLAGS:
            return None
        found[_ACP_FLAGS[flag]] = value
    if found.get("framing", "auto") not in _FRAMINGS:
        return None
    if not all(
        found.get(k, "1").isdigit() for k in ("max_frame", "max_rounds", "max_retry_seconds")
    ):
        return None
    if found.get("max_rounds", "1").strip("0") == "":  # 0 rounds: argparse says why not
        return None
    return found


def _fast_lsp_args(argv: list[str]) -> dict[str, str] | None:
    """`tether lsp --flag value ...` without argparse; None when argparse must decide."""
    if not argv or argv[0] != "lsp" or len(argv) % 2 == 0:
        return None
    found = {_LSP_FLAGS.get(f, ""): v for f, v in zip(argv[1::2], argv[2::2], strict=True)}
    if "" in found or not found.get("max_frame", "1").isdigit():
        return None
    return found


def _lsp(found: dict[str, str]) -> int:
    from tether.rpc.lsp.lsp_serve import serve_stdio
    from tether.rpc.startup import ServeOptions

    options = ServeOptions(
        script=found.get("script"), model=found.get("model"), log_level=found.get("log_level")
    )
    if "max_frame" in found:
        options.max_frame = int(found["max_frame"])
    return serve_stdio(options)


def _bad_script(script: str | None) -> bool:
    """A `--script` file that cannot be a scripted model is said in one line (no traceback)."""
    if script is None:
        return False
    from pathlib import Path

    from tether.engine.providers.scripted import load_script
    from tether.errors import ProviderError

    try:
        load_script(Path(script))
    except ProviderError as exc:
        print(f"tether: {exc}", file=sys.stderr)
        return True
    return False


def main(argv: list[str] | None = None, warm: bool = True) -> int:
    """`warm`: hand `acp` and `lsp` to the warm server when one serves this user (tether/warm/);
    False in the worker it forks, which serves them in-process."""
    argv = sys.argv[1:] if argv is None else argv
    if warm and argv[:1] in (["acp"], ["lsp"]):
        from tether.warm.launcher import launch

        code = launch(argv)
        if code is not None:
            return code
    lsp = _fast_lsp_args(argv)
    if lsp is not None:
        return 2 if _bad_script(lsp.get("script")) else _lsp(lsp)
    fast = _fast_acp_args(argv)
    if fast is not None and _bad_script(fast.get("script")):
        return 2
    if fast is not None:
        from tether.rpc.acp.acp_serve import serve_stdio
        from tether.rpc.startup import ServeOptions

        opts = ServeOptions(script=fast.get("script"), model=fast.get("model"))
        opts.framing = fast.get("framing", "auto")  # type: ignore[assignment]  # checked above
        opts.max_frame = int(fast.get("max_frame", opts.max_frame))
        opts.log_level = fast.get("log_level", opts.log_level)
        opts.max_rounds = int(fast["max_rounds"]) if "max_rounds" in fast else None
        opts.auto_continue = "auto_continue" in fast
        retry = fast.get("max_retry_seconds")
        opts.max_retry_seconds = int(retry) if retry is not None else None
        return serve_stdio(opts)
    args = _parse(argv)
    if _bad_script(getattr(args, "script", None)):
        return 2
    if args.command == "acp":
        from tether.rpc.acp.acp_serve import serve_stdio
        from tether.rpc.startup import ServeOptions

        opts = ServeOptions(
            args.framing, args.script, args.max_frame_bytes, args.log_level, args.model
        )
        opts.max_rounds, opts.auto_continue = args.max_rounds, args.auto_continue
        opts.max_retry_seconds = args.max_retry_seconds
        return serve_stdio(opts)
    if args.command == "lsp":
        flags = {"script": args.script, "model": args.model, "log_level": args.log_level}
        found = {k: v for k, v in flags.items() if v is not None}
        return _lsp({**found, "max_frame": str(args.max_frame_bytes)})
    if args.command in ("config", "sessions") and _subcommand(args) is None:
        _parser().parse_args([args.command, "--help"])  # prints its help and exits 0
    if args.command == "config":
        return _config(args)
    if args.command == "sessions":
        from tether.cli.manage_sessions import run_sessions

        return run_sessions(args)
    if args.command == "doctor":
        from tether.cli.doctor import run_doctor
        from tether.logs import log_path

        return run_doctor(
            probe=args.probe,
            as_json=args.json,
            model_override=args.model,
            log_file=log_path(),
            out=sys.stdout,
            move_damaged_store=args.move_damaged_store,
        )
    if args.command == "ask":
        return _ask(args)
    if args.print_prompt is not None:
        args.prompt = args.print_prompt
        return _ask(args)
    if sys.stdin.isatty() and sys.stdout.isatty():
        from tether.cli.chat.chat_app import run_chat

        return run_chat(args)
    _parser().print_usage(sys.stderr)
    print("tether: a command, -p PROMPT, or a terminal for the chat", file=sys.stderr)
    return 2


def _parse(argv: list[str]) -> argparse.Namespace:
    """The root parser's answer; an unknown flag is reported by the command it was given to
    (`tether ask --foo` shows ask's usage, not the root's)."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        path = [args.command, _subcommand(args)] if args.command else []
        sub = _subparser(parser, [name for name in path if name])
        sub.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _subparser(parser: argparse.ArgumentParser, path: list[str]) -> argparse.ArgumentParser:
    import argparse

    for name in path:
        for action in parser._actions:  # argparse keeps its subparsers here, and only here
            if isinstance(action, argparse._SubParsersAction) and name in action.choices:
                parser = action.choices[name]
                break
    return parser


def _subcommand(args: argparse.Namespace) -> str | None:
    return getattr(args, f"{args.command}_command", None)


def _ask(args: argparse.Namespace) -> int:
    import os

    from tether.cli import exit_codes
    from tether.cli.ask_prompt import EmptyPrompt, read_prompt

    try:
        prompt = read_prompt(args.prompt)
    except EmptyPrompt as exc:
        print(f"tether: {exc}", file=sys.stderr)
        return exit_codes.USAGE
    except KeyboardInterrupt:
        return exit_codes.INTERRUPTED
    try:
        from tether.cli.ask_client import AskOptions, cwd_problem, run_ask
        from tether.cli.config_gate import gate

        problem = cwd_problem(args.cwd)  # before the config: a project file is looked for there
        if problem is not None:
            print(f"tether: --cwd {os.path.abspath(args.cwd)}: {problem}", file=sys.stderr)
            return exit_codes.USAGE
        stop = gate(args.cwd, args.model, args.script)
    except KeyboardInterrupt:  # Ctrl-C while still importing: exit as the shell expects
        return exit_codes.INTERRUPTED
    if stop is not None:
        return stop
    return run_ask(
        AskOptions(
            prompt=prompt,
            cwd=args.cwd,
            policy="yes" if args.yes else "no" if args.no else "ask",
            json=args.json,
            output_format=args.output_format,
            mode=args.mode,
            framing=args.framing,
            script=args.script,
            model=args.model,
            log_level=args.log_level,
            max_rounds=args.max_rounds,
            auto_continue=args.auto_continue,
            max_retry_seconds=args.max_retry_seconds,
            quiet=args.quiet,
            continue_last=args.continue_last,
            resume=args.resume,
        )
    )


def _config(args: argparse.Namespace) -> int:
    from tether.engine.config.file import write_example
    from tether.paths import config_path

    path = config_path()
    if args.config_command == "path":
        print(path)
        return 0
    if args.config_command == "show":
        from tether.cli.config_show import show_config

        return show_config(args.cwd, args.model, args.json)
    if args.config_command == "edit":
        import os

        from tether.cli.config_edit import edit_config

        return edit_config(path, os.environ)
    try:
        write_example(path, force=args.force)
    except FileExistsError:
        print(f"{path} already exists; `tether config init --force` overwrites it", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0
