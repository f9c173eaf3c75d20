"""What `tether ask`, `tether -p` and the chat exit with: each outcome a script must tell apart
has a code of its own (docs/cli.md lists them)."""

OK = 0
TURN_FAILED = 1  # the turn ended in an error: the provider failed, the model refused, a tool broke
USAGE = 2  # a usage or configuration error: bad flags, a config file or model that cannot be used
DENIED = 3  # a permission the turn needed was denied (--no, or no terminal to ask on)
INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
