"""The agent, protocol-agnostic: sessions, the turn/round loop, tools pipeline, providers, store."""
