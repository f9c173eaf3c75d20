"""The engine's version-control code: the repository a session found at start and the hardened
runner every git tether runs for itself goes through."""
