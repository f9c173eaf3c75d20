"""A session's modes: their ids, names and what each allows. Alone in a module that imports
nothing, so the command line's `--mode` takes its choices from here without loading the engine."""

MODES: dict[str, tuple[str, str]] = {
    "ask": (
        "Ask",
        "Ask before every change to files and before running anything but read-only commands",
    ),
    "code": (
        "Code",
        "Create new files and run commands in the sandbox freely; ask before replacing files, "
        "and before commands no sandbox confines",
    ),
    "read-only": ("Read-only", "Read and search only: nothing is changed and nothing is run"),
    "allow-all": (
        "Allow all (this session)",
        "Run every call without asking, for this session only; the command and path denylists "
        "still refuse what they name, and edits to skills still ask",
    ),
}
READ_ONLY_MODE = "read-only"
ALLOW_ALL_MODE = "allow-all"  # never a new or reloaded session's mode: chosen each time
DEFAULT_MODE = "ask"
