"""Agent Skills (agentskills.io): directories with a `SKILL.md` (YAML frontmatter naming and
describing the skill, then Markdown instructions) and their resources. `skill_roots.py` says
where skills are looked for, `frontmatter.py` reads the header, `skill_discovery.py` finds and
checks every skill (nothing cached), `skill_catalog.py` renders the system prompt's list."""
