"""Session modes and config options (mode, model), kept in sync both ways."""

from __future__ import annotations

from tether.engine.models import ModelCatalog
from tether.engine.session import MODES, Session
from tether.schemas import acp


def mode_state(session: Session) -> acp.SessionModeState:
    return acp.SessionModeState(
        current_mode_id=session.state.mode,
        available_modes=[
            acp.SessionMode(id=k, name=n, description=d) for k, (n, d) in MODES.items()
        ],
    )


def config_options(session: Session, catalog: ModelCatalog) -> list[acp.SelectConfigOption]:
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
    ]
