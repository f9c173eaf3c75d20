"""JSON-RPC 2.0 peer and the protocol fronts built on it."""
