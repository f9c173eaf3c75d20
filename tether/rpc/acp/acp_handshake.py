"""ACP's `initialize`: version negotiation and capabilities.

Plain JSON in, plain JSON out, and no heavy imports: the first `initialize` is answered before
the event loop, msgspec or the engine are loaded (editors wait on it at startup; see
tether/rpc/startup.py). The client's capabilities are typed lazily, leniently: a malformed
optional capability counts as absent.
"""

from __future__ import annotations

from tether import __version__
from tether.rpc.startup import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from tether.schemas import acp

PROTOCOL_VERSION = 1

AGENT_CAPABILITIES: dict[str, Any] = {
    "loadSession": True,
    # Images reach image-capable models; a session on another model refuses them with a reason.
    "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
    "mcpCapabilities": {"http": True, "sse": False},
    "sessionCapabilities": {
        "list": {},
        "resume": {},
        "close": {},
        "delete": {},
        "additionalDirectories": {},
    },
}


class Handshake:
    ensure_ascii = False  # as the peer's msgspec writes: non-ASCII ids go out as UTF-8

    def __init__(self) -> None:
        self.raw_caps: dict[str, Any] | None = None
        self.client_info: dict[str, Any] | None = None
        self._typed: acp.ClientCapabilities | None = None

    @property
    def done(self) -> bool:
        return self.raw_caps is not None

    def clean(self, params: object) -> dict[str, Any] | None:
        """The params when they are an `initialize` answerable before the event loop; None
        sends the request down the normal path (which also reports any error)."""
        if not isinstance(params, dict):
            return None
        version = params.get("protocolVersion")
        if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= 65535:
            return None
        for key in ("clientCapabilities", "clientInfo"):
            if params.get(key) is not None and not isinstance(params[key], dict):
                return None
        return params

    def answer(self, params: dict[str, Any]) -> dict[str, Any]:
        """The `initialize` result for already-validated params (wire names)."""
        caps = params.get("clientCapabilities")
        info = params.get("clientInfo")
        self.raw_caps = caps if isinstance(caps, dict) else {}
        self.client_info = info if isinstance(info, dict) else None
        self._typed = None
        return {
            # We speak only v1: any other requested version is answered with ours.
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": AGENT_CAPABILITIES,
            "authMethods": [],
            "agentInfo": {"name": "tether", "title": "tether", "version": __version__},
        }

    @property
    def client(self) -> acp.ClientCapabilities | None:
        if self.raw_caps is None:
            return None
        if self._typed is None:
            import msgspec

            from tether.schemas import acp

            try:
                self._typed = msgspec.convert(self.raw_caps, acp.ClientCapabilities)
            except msgspec.ValidationError as exc:
                import logging

                logging.getLogger("tether.acp").warning(
                    "ignoring malformed client capabilities: %s", exc
                )
                self._typed = acp.ClientCapabilities()
        return self._typed

    @property
    def notices(self) -> bool:
        c = self.client
        return bool(c and c.session and c.session.notices is not None)

    @property
    def one_diff_per_request(self) -> bool:
        """CodeCompanion shows a permission request's first diff only: a round asking once
        for two files would have the user approve the second unseen."""
        name = (self.client_info or {}).get("name")
        return isinstance(name, str) and name.strip().lower().startswith("codecompanion")

    @property
    def form_elicitation(self) -> bool:
        c = self.client
        return bool(c and c.elicitation and c.elicitation.form is not None)
