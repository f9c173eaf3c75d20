"""What the session manager is given: the engine's dependencies (built by the composition root)
and the protocol front it shows events through."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec

from tether.engine import events as ev
from tether.engine.config.catalog import ModelCatalog
from tether.engine.providers.base import LLM
from tether.engine.registry import Registry
from tether.engine.seam import BUILTIN_COMMAND_DENYLIST, Capabilities, CommandDenylist, Web
from tether.engine.sessions.renderings import Replay
from tether.engine.sessions.state import Session
from tether.engine.sessions.store import Store
from tether.engine.skills.skill_roots import SkillPlaces
from tether.engine.system_prompt import PERSONA
from tether.engine.turn import TurnConfig
from tether.engine.workspace import DEFAULT_DENYLIST, DirGrant
from tether.schemas.config import AgentConfig, SandboxConfig

if TYPE_CHECKING:
    from tether.engine.mcp.spec import ServerSpec


class Front(Protocol):
    """What the manager needs of a protocol front."""

    async def show(self, session_id: str, event: ev.Event) -> None:
        """Render an engine event to the client (already recorded for replay)."""
        ...

    def capabilities(self, session: Session, model: LLM) -> Capabilities:
        """The seam implementations for a session's calls (client fs, approvals, ...)."""
        ...

    async def catch_up(self, session_id: str, replay: Replay) -> None:
        """Show what another process added to the session (its turns) before this turn."""
        ...


class EngineDeps(msgspec.Struct):
    catalog: ModelCatalog
    registry_factory: Callable[[], Registry]
    store: Store
    spill_root: Path
    turn: TurnConfig = msgspec.field(default_factory=lambda: TurnConfig(system=PERSONA))
    path_denylist: tuple[str, ...] = DEFAULT_DENYLIST  # unless the config file sets one
    command_denylist: CommandDenylist = BUILTIN_COMMAND_DENYLIST  # unless the config says more
    web: Web | None = None  # ctx.web for every session; None: built from the environment
    mcp_servers: tuple[ServerSpec, ...] = ()  # the config file's, for every session
    sandbox: SandboxConfig = msgspec.field(default_factory=SandboxConfig)  # the config's [sandbox]
    agent: AgentConfig = msgspec.field(
        default_factory=AgentConfig
    )  # [agent]: a new session's defaults
    skills: SkillPlaces = msgspec.field(
        default_factory=SkillPlaces
    )  # tether's own and [skills] paths
    trash: bool = True  # [trash] enabled: delete_path trashes (False: deletes for good)
    allowed_paths: tuple[DirGrant, ...] = ()  # [agent] allow_paths: open without asking
