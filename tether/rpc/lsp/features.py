"""What the client said it can do in `initialize`, as the few yes/no questions the front asks."""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types


@dataclass(frozen=True)
class ClientFeatures:
    progress: bool = False  # window/workDoneProgress/create + $/progress
    show_document: bool = False  # window/showDocument
    apply_edit: bool = False  # workspace/applyEdit
    document_changes: bool = False  # versioned edits in WorkspaceEdit.documentChanges
    create_files: bool = False  # a `create` resource operation in documentChanges

    @classmethod
    def of(cls, caps: types.ClientCapabilities) -> ClientFeatures:
        window = caps.window or types.WindowClientCapabilities()
        workspace = caps.workspace or types.WorkspaceClientCapabilities()
        edits = workspace.workspace_edit or types.WorkspaceEditClientCapabilities()
        operations = edits.resource_operations or []
        # Resource operations exist only in documentChanges: a client offering them takes
        # documentChanges too (Neovim 0.11 says so only this way).
        document_changes = bool(edits.document_changes) or bool(operations)
        return cls(
            progress=bool(window.work_done_progress),
            show_document=bool(window.show_document and window.show_document.support),
            apply_edit=bool(workspace.apply_edit),
            document_changes=document_changes,
            create_files=types.ResourceOperationKind.Create in operations,
        )
