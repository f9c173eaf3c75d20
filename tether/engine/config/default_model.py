"""The model new sessions start with: `--model`, else `--script`'s model, else TETHER_MODEL,
else `[defaults] model`, else the first model of the first provider (the file's providers before
the environment's), else the offline demo, which is thus the default only when nothing is
configured. A model id naming a known provider but an unlisted model is added with default
limits, so a new model needs no config change."""

from __future__ import annotations

from tether.engine.config.adapters import model_factory
from tether.engine.config.catalog import ModelCatalog
from tether.engine.config.resolve import Setup, model_info, no_provider, provider_of

MODEL_ENV = "TETHER_MODEL"

Choice = tuple[str, str | None]  # (where it comes from, the model it names)


def choose_default(catalog: ModelCatalog, setup: Setup, choices: list[Choice]) -> bool:
    """The first choice that names a usable model becomes the default; the others are noted.
    False when none did."""
    for source, wanted in choices:
        if not wanted:
            continue
        found, why = _find_model(catalog, setup, wanted)
        if found is not None:
            catalog.default = found
            catalog.default_source = source
            return True
        problem = f"{source}: unknown model {wanted!r} ({why})"
        catalog.unusable_choices.append(problem)
        catalog.warnings.append(f"{problem}; ignored")
    return False


def default_to_a_provider(catalog: ModelCatalog, setup: Setup) -> None:
    """Nothing chosen: a configured provider's first model (its kind's first built-in, else the
    first listed for it) rather than the demo. With several, the file's come first."""
    ordered = sorted(setup.providers.values(), key=lambda p: p.origin != "config")
    for provider in ordered:
        first = next((m for m in setup.models if provider_of(m) == provider.name), None)
        if first is not None:
            catalog.default = first
            many = len(setup.providers) > 1
            catalog.default_source = (
                f"the first model of {'the first' if many else 'the only'} configured provider"
            )
            return


def _find_model(catalog: ModelCatalog, setup: Setup, wanted: str) -> tuple[str | None, str]:
    """`wanted` as a catalog id, adding "provider:model" for a known provider when unlisted;
    a bare model name is accepted when exactly one provider offers it."""
    if wanted in catalog:
        return wanted, ""
    if ":" in wanted:
        name, _, model = wanted.partition(":")
        provider = setup.providers.get(name)
        if provider is None or not model:
            return None, no_provider(name, setup.providers)
        info = model_info(wanted)
        catalog.add(info, model_factory(provider, info, catalog.clients))
        return wanted, ""
    matches = [i for i in catalog.infos if i.partition(":")[2] == wanted]
    if len(matches) == 1:
        return matches[0], ""
    if matches:
        return None, f"offered by {', '.join(matches)}: name the provider"
    return None, "no provider offers it; name it as provider:model"
