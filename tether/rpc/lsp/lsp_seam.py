"""A session's capability seam over LSP: approvals and questions as `window/showMessageRequest`
(one approval per connection, the round's review document shown first to a client that shows
documents), files through open documents and `workspace/applyEdit`, commands on this machine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tether.engine.local.processes import LocalTerminal
from tether.engine.local.spill import LocalSpill
from tether.engine.providers.base import LLM
from tether.engine.read_ledger import ReadLedger
from tether.engine.seam import Capabilities, Web
from tether.engine.sessions.deps import EngineDeps
from tether.engine.sessions.manager import SessionManager
from tether.engine.sessions.state import AccessGrant, Session
from tether.engine.workspace import DirGrant, Workspace, process_grants
from tether.rpc.lsp.buffer_fs import LspFileSystem
from tether.rpc.lsp.documents import Documents
from tether.rpc.lsp.features import ClientFeatures
from tether.rpc.lsp.message_approval import LspApproval
from tether.rpc.lsp.questions import LspAsk
from tether.rpc.lsp.review_document import ReviewDocuments
from tether.rpc.lsp.wire import Connection


class LspSeam:
    """`features`: what the client offers (known once it is initialized); `status`: a line for
    the running turn's progress (an approval waiting)."""

    def __init__(
        self,
        conn: Connection,
        documents: Documents,
        deps: EngineDeps,
        manager: SessionManager,
        features: Callable[[], ClientFeatures],
        status: Callable[[str], None],
    ) -> None:
        self.conn = conn
        self.documents = documents
        self.deps = deps
        self.manager = manager
        self._features = features
        self._status = status
        self._approval: LspApproval | None = None
        self._web: Web | None = None

    def capabilities(self, session: Session, model: LLM) -> Capabilities:
        features = self._features()
        if self._approval is None:
            self._approval = LspApproval(
                self.conn,
                status=self._status,
                reviews=ReviewDocuments(self.deps.spill_root / session.id),
                shows_documents=features.show_document,
            )
        if self._web is None:  # one per process
            from tether.engine.web.build import build_web

            self._web = self.deps.web or build_web()
        roots = [Path(r) for r in session.state.roots] or [Path(session.cwd)]
        configured = self.deps.catalog.path_denylist
        denylist = configured if configured is not None else self.deps.path_denylist
        workspace = Workspace(
            roots,
            denylist=denylist,
            grants=[
                *self.deps.allowed_paths,
                *(DirGrant(Path(g.path), g.access) for g in session.state.dir_grants),
                *process_grants(session.id),
            ],
            on_grant=lambda g: _keep_grant(session, g),
        )
        return Capabilities(
            session_id=session.id,
            cwd=Path(session.cwd),
            roots=roots,
            fs=LspFileSystem(self.conn, self.documents, features),
            terminal=LocalTerminal(),
            approval=self._approval,
            ask=LspAsk(self.conn, self._approval),
            spill=LocalSpill(self.deps.spill_root / session.id),
            web=self._web,
            llm=model,
            workspace=workspace,
            reads=ReadLedger(),
            pty=self.manager.runtime(session.id).pty_host(self.deps.agent),
            command_denylist=self.deps.command_denylist,
            sandbox=self.manager.sandbox(session),
            repositories=self.manager.runtime(session.id).repositories,
            trash=self.deps.trash,
        )


def _keep_grant(s: Session, grant: DirGrant) -> None:
    """A directory the user let the session reach stays reachable (stored with it)."""
    kept = [g for g in s.state.dir_grants if g.path != str(grant.path)]
    s.state.dir_grants = [*kept, AccessGrant(str(grant.path), grant.access)]
