"""A session's capability seam over ACP: the client's fs, approvals and questions where the
client offers them (commands in its terminal); local processes, spill and the process's web
capability otherwise."""

from __future__ import annotations

from pathlib import Path

from tether.engine.local.processes import LocalTerminal
from tether.engine.local.spill import LocalSpill
from tether.engine.providers.base import LLM
from tether.engine.read_ledger import ReadLedger
from tether.engine.sandbox.session_sandbox import Sandbox
from tether.engine.seam import BUILTIN_COMMAND_DENYLIST, Capabilities, CommandDenylist, Ptys, Web
from tether.engine.sessions.state import AccessGrant, Session
from tether.engine.vcs.repository import Repositories
from tether.engine.workspace import DirGrant, Workspace, process_grants
from tether.rpc.acp.acp_handshake import Handshake
from tether.rpc.acp.client_fs import ClientFileSystem
from tether.rpc.acp.client_terminal import ClientTerminal, terminal_form
from tether.rpc.acp.elicitation import AcpAsk
from tether.rpc.acp.permission import AcpApproval
from tether.rpc.peer import Peer
from tether.schemas import acp


def acp_capabilities(
    peer: Peer,
    handshake: Handshake,
    s: Session,
    model: LLM,
    spill_root: Path,
    web: Web,
    denylist: tuple[str, ...],
    pty: Ptys | None = None,
    commands: CommandDenylist = BUILTIN_COMMAND_DENYLIST,
    sandbox: Sandbox | None = None,
    repositories: Repositories | None = None,
    allowed: tuple[DirGrant, ...] = (),
    *,
    trash: bool = True,
) -> Capabilities:
    """Built per turn: the read ledger (what `edit_lineno` may change) is this turn's.
    `allowed`: the directories the config file opens to every session (`allow_paths`)."""
    caps = handshake.client or acp.ClientCapabilities()
    roots = [Path(r) for r in s.state.roots] or [Path(s.cwd)]

    def withdraw() -> bool:
        # After the client's own session/cancel it answers its pending requests itself.
        return s.cancelled_by != "client"

    forms = handshake.form_elicitation
    return Capabilities(
        session_id=s.id,
        cwd=Path(s.cwd),
        roots=roots,
        fs=ClientFileSystem(peer, s.id, caps.fs),
        terminal=(
            ClientTerminal(peer, s.id, form=terminal_form(handshake))
            if caps.terminal
            else LocalTerminal()
        ),
        approval=AcpApproval(peer, s.id, forms=forms, withdraw=withdraw),
        ask=AcpAsk(peer, s.id, forms=forms, withdraw=withdraw),
        spill=LocalSpill(spill_root / s.id),
        web=web,
        llm=model,
        workspace=Workspace(
            roots,
            denylist=denylist,
            grants=[
                *allowed,
                *(DirGrant(Path(g.path), g.access) for g in s.state.dir_grants),
                *process_grants(s.id),
            ],
            on_grant=lambda g: _keep(s, g),
        ),
        reads=ReadLedger(),
        pty=pty,
        command_denylist=commands,
        sandbox=sandbox,
        repositories=repositories if repositories is not None else Repositories(),
        trash=trash,
    )


def _keep(s: Session, grant: DirGrant) -> None:
    kept = [g for g in s.state.dir_grants if g.path != str(grant.path)]
    s.state.dir_grants = [*kept, AccessGrant(str(grant.path), grant.access)]
