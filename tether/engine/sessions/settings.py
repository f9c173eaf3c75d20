"""A session's settings: mode, approvals, model and effort, network, title. Each change is
checked against its choices (InvalidSetting names them) and stored at once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tether.engine import events as ev
from tether.engine.config.catalog import ModelCatalog
from tether.engine.sessions.runtime import SessionRuntime
from tether.engine.sessions.state import ALWAYS, APPROVALS, MODES, NETWORK, Session
from tether.errors import TetherError
from tether.schemas.config import SandboxConfig


class InvalidSetting(TetherError, ValueError):
    """A setting's value is not one of its choices; the message lists them."""

    def __init__(self, message: str) -> None:
        super().__init__("SETTING_INVALID", message)


class SessionSettings:
    def __init__(
        self,
        catalog: ModelCatalog,
        sandbox: SandboxConfig,
        *,
        persist: Callable[[Session], Awaitable[None]],
        emit: Callable[[Session, ev.Event], Awaitable[None]],
        runtime: Callable[[str], SessionRuntime],
    ) -> None:
        self.catalog = catalog
        self._sandbox = sandbox
        self._persist = persist
        self._emit = emit
        self._runtime = runtime

    async def set_mode(self, s: Session, mode: str) -> None:
        _one_of(mode, MODES, "mode")
        s.state.mode = mode
        await self._persist(s)

    async def set_approvals(self, s: Session, value: str) -> None:
        _one_of(value, APPROVALS, "approvals value")
        s.state.approvals = value
        await self._persist(s)

    async def set_always(self, s: Session, value: str) -> None:
        _one_of(value, ALWAYS, "always value")
        s.state.always = value
        await self._persist(s)

    async def set_model(self, s: Session, model: str) -> None:
        catalog = self.catalog
        _one_of(model, catalog.infos, "model")
        s.state.model = model
        s.state.reasoning = reasoning_for(model, s.state.reasoning, catalog)
        self._runtime(s.id).llm = None
        await self._persist(s)

    async def set_reasoning(self, s: Session, level: str) -> None:
        levels = self.catalog.infos[s.state.model].reasoning_levels
        _one_of(level, {k: k for k in levels}, "reasoning level")
        s.state.reasoning = level
        await self._persist(s)

    async def set_title(self, s: Session, title: str) -> None:
        s.title = " ".join(title.split())[:120] or None
        await self._emit(s, ev.TitleChanged(s.title or ""))
        await self._persist(s)

    def network(self, s: Session) -> bool:
        """Whether the session's confined commands may use the network."""
        chosen = s.state.network
        return self._sandbox.network if chosen is None else chosen

    async def set_network(self, s: Session, value: str) -> None:
        _one_of(value, NETWORK, "network value")
        s.state.network = value == "on"
        await self._persist(s)


def reasoning_for(model: str, wanted: str | None, catalog: ModelCatalog) -> str | None:
    """The effort level a session keeps after picking `model`: its choice when the model has
    that level, else the model's default (None for a model without levels)."""
    info = catalog.infos.get(model)
    if info is None or not info.reasoning_levels:
        return None
    if wanted in info.reasoning_levels:
        return wanted
    return info.default_reasoning or info.reasoning_levels[0]


def _one_of(value: str, choices: object, what: str) -> None:
    if value not in choices:  # type: ignore[operator]  # any container of names
        known = ", ".join(choices)  # type: ignore[arg-type]
        raise InvalidSetting(f"unknown {what} {value!r}; choose one of {known}")
