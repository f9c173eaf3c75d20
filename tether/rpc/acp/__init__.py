"""The ACP v1 agent front: handlers, the event -> session/update translator, permission
projection and the ACP-backed seam implementations."""
