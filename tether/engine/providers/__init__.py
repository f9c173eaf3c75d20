"""The provider engine: adapters from the engine's history to each LLM wire API."""
