"""Wire types only: msgspec Structs for JSON-RPC, ACP and provider APIs. No behaviour."""
