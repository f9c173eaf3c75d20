"""ACP's first `session/new`, answered before the event loop like the first `initialize`
(tether/rpc/startup.py), once that is answered.

What a new session's answer holds (its modes and config options) depends only on the model
catalog, and the catalog only on the config file, the environment and the command line. The
agent keeps the answer it would give a fresh session in a small cache file, under a key made of
those inputs; when the key still matches, a plain `session/new` (an existing absolute directory,
no MCP servers, no extra directories) is answered here with plain json, and the session itself
is created as soon as the engine is up, before any later frame is served. Anything else goes
down the normal path, as does every first run.

No imports beyond the standard library's lightest: this runs before anything heavy is loaded.
"""

from __future__ import annotations

import os

from tether.rpc.startup import TYPE_CHECKING, read_frames, write_all

if TYPE_CHECKING:
    from typing import Any

    from tether.rpc.startup import ServeOptions
    from tether.transports.framing import Frame, Framer

CACHE_FILE = "new-session.json"
_ENV_PREFIXES = ("OPENAI_", "ANTHROPIC_", "DEEPSEEK_", "TETHER_")
_ENV_IGNORED = (
    *("TETHER_LOG_LEVEL", "TETHER_STDIO_THREAD", "TETHER_NONINTERACTIVE"),
    *("TETHER_WARM", "TETHER_WARM_DIR", "TETHER_WARM_IDLE_SECONDS"),  # how it starts
)


class Prepared:
    """A session answered here, for the engine to create under the id it was given."""

    def __init__(self, session_id: str, cwd: str) -> None:
        self.session_id = session_id
        self.cwd = cwd


def cached_answer(options: ServeOptions) -> dict[str, Any] | None:
    """The cached answer for this configuration, if there is one."""
    from tether.paths import data_dir

    return read_answer(str(data_dir()), cache_key(options))


def answer_first(
    in_fd: int, out_fd: int, framer: Framer, frames: list[Frame], cached: dict[str, Any] | None
) -> tuple[list[Frame], list[Prepared]]:
    """Answer the first `session/new` here too when there is a cached answer for this
    configuration (the engine's modules load on a thread meanwhile: rpc/startup.py)."""
    if cached is None:
        return frames, []
    frames = frames or read_frames(in_fd, framer)
    first = frames[0] if frames else None
    reply = answer(first, cached) if isinstance(first, bytes) else None
    if reply is None:
        return frames, []
    data, prepared = reply
    write_all(out_fd, framer.encode(data))
    return frames[1:], [prepared]


def cache_key(options: ServeOptions, env: dict[str, str] | None = None) -> str:
    """Everything the catalog is built from: a changed key means the cached answer is stale."""
    import hashlib
    import json

    from tether import __version__
    from tether.paths import config_path

    env = dict(os.environ) if env is None else env
    relevant = {
        k: v for k, v in env.items() if k.startswith(_ENV_PREFIXES) and k not in _ENV_IGNORED
    }
    files = [str(config_path(env))] + ([options.script] if options.script else [])
    stamps = [_stamp(f) for f in files]
    doc = [__version__, options.model, options.script, sorted(relevant.items()), stamps]
    return hashlib.sha256(json.dumps(doc).encode()).hexdigest()


def _stamp(path: str) -> list[object]:
    try:
        st = os.stat(path)
    except OSError:
        return [path, None]
    return [path, st.st_mtime_ns, st.st_size]


def read_answer(home: str, key: str) -> dict[str, Any] | None:
    """The cached fresh-session answer (modes, configOptions) when its key matches."""
    import json

    try:
        with open(os.path.join(home, "cache", CACHE_FILE), encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if (
        not isinstance(doc, dict)
        or doc.get("key") != key
        or not isinstance(doc.get("answer"), dict)
    ):
        return None
    return doc["answer"]


def write_answer(home: str, key: str, answer: dict[str, Any]) -> None:
    """Keep the fresh-session answer for the next start (owner-only, replaced atomically)."""
    import json

    directory = os.path.join(home, "cache")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, CACHE_FILE)
    tmp = f"{path}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"key": key, "answer": answer}, f)
    os.replace(tmp, path)


def answer(frame: bytes, cached: dict[str, Any]) -> tuple[bytes, Prepared] | None:
    """The reply to `frame` when it is a plain `session/new` this path can answer."""
    if b'"session/new"' not in frame:
        return None
    import json

    try:
        msg = json.loads(frame)
    except (ValueError, RecursionError):
        return None
    if not isinstance(msg, dict):
        return None  # an array or a scalar: the normal path answers it as bad input
    params = msg.get("params")
    rid = msg.get("id")
    if (
        msg.get("jsonrpc") != "2.0"
        or msg.get("method") != "session/new"
        or isinstance(rid, bool)
        or not isinstance(rid, int | str)
        or not isinstance(params, dict)
        or not _plain(params)
    ):
        return None
    cwd = os.path.normpath(params["cwd"])
    session_id = f"sess_{os.urandom(16).hex()}"
    result = {"sessionId": session_id, **cached}
    reply = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}, separators=(",", ":"))
    return reply.encode(), Prepared(session_id, cwd)


def _plain(params: dict[str, Any]) -> bool:
    """No MCP servers, no extra directories, nothing unknown: the common case, checked fully."""
    if set(params) - {"cwd", "mcpServers", "additionalDirectories", "_meta"}:
        return False
    cwd = params.get("cwd")
    extra = params.get("additionalDirectories")
    return (
        isinstance(cwd, str)
        and os.path.isabs(cwd)
        and os.path.isdir(cwd)
        and params.get("mcpServers") == []
        and extra in (None, [])
        and isinstance(params.get("_meta", {}), dict)
    )
