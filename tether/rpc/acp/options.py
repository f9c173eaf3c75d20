"""Session modes and config options (mode, model), kept in sync both ways."""

from __future__ import annotations

from tether.engine.config.catalog import ModelCatalog
from tether.engine.sessions.state import ALWAYS, APPROVALS, MODES, NETWORK, Session
from tether.schemas import acp


def mode_state(session: Session) -> acp.SessionModeState:
    return acp.SessionModeState(
        current_mode_id=session.state.mode,
        available_modes=[
            acp.SessionMode(id=k, name=n, description=d) for k, (n, d) in MODES.items()
        ],
    )


def config_options(
    session: Session, catalog: ModelCatalog, network: bool = False
) -> list[acp.SelectConfigOption]:
    """`network`: whether the session's confined commands may use the network."""
    return [
        *_base_options(session, catalog),
        _network_option(network),
        *_reasoning_option(session, catalog),
    ]


def _network_option(network: bool) -> acp.SelectConfigOption:
    what = ("network", "Command network", "Whether commands run in the sandbox may use the network")
    return _choice(what, "on" if network else "off", NETWORK)


def _reasoning_option(session: Session, catalog: ModelCatalog) -> list[acp.SelectConfigOption]:
    """A reasoning-effort option, for models that have effort levels."""
    info = catalog.infos.get(session.state.model)
    if info is None or not info.reasoning_levels:
        return []
    current = session.state.reasoning or info.default_reasoning or info.reasoning_levels[0]
    return [
        acp.SelectConfigOption(
            id="reasoning",
            name="Reasoning",
            category="thought_level",
            current_value=current,
            options=[acp.SelectOption(value=v, name=v.capitalize()) for v in info.reasoning_levels],
        )
    ]


def has_reasoning(session: Session, catalog: ModelCatalog) -> bool:
    info = catalog.infos.get(session.state.model)
    return info is not None and bool(info.reasoning_levels)


def _base_options(session: Session, catalog: ModelCatalog) -> list[acp.SelectConfigOption]:
    return [
        acp.SelectConfigOption(
            id="mode",
            name="Mode",
            category="mode",
            current_value=session.state.mode,
            options=[
                acp.SelectOption(value=k, name=n, description=d) for k, (n, d) in MODES.items()
            ],
        ),
        acp.SelectConfigOption(
            id="model",
            name="Model",
            category="model",
            current_value=session.state.model,
            options=[acp.SelectOption(value=i.id, name=i.name) for i in catalog.infos.values()],
        ),
        _choice(
            ("approvals", "Approvals", "How several tool calls of one round are put to you"),
            session.state.approvals,
            APPROVALS,
        ),
        _choice(
            ("always", "Always answers", 'What an "always allow" or "always reject" answer covers'),
            session.state.always,
            ALWAYS,
        ),
    ]


def _choice(
    what: tuple[str, str, str], current: str, table: dict[str, tuple[str, str]]
) -> acp.SelectConfigOption:
    """A select option of one of the session's tables (id, name, description)."""
    option_id, name, description = what
    return acp.SelectConfigOption(
        id=option_id,
        name=name,
        description=description,
        current_value=current,
        options=[acp.SelectOption(value=k, name=n, description=d) for k, (n, d) in table.items()],
    )
