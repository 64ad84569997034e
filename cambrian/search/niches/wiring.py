"""How the composition root (``search/build.py``) adds strategy niches to a run: the strategy
tagger hook when ``niches.enabled`` or the selector reads niches, and the tags handed to such a
selector."""

from __future__ import annotations

from cambrian.config import RunConfig
from cambrian.core.errors import ConfigError
from cambrian.core.objective import Objective
from cambrian.llm.cheapest import cheapest_label
from cambrian.llm.gateway import LLMGateway
from cambrian.meta.strategy_tagger import StrategyTagger
from cambrian.meta.strategy_tags import TagBook
from cambrian.mutate.intents import check_intent_names
from cambrian.search.algorithm import Selector
from cambrian.search.niches.sampler import NicheAware, NicheInputs
from cambrian.store.recorder import Recorder


def check_niches(config: RunConfig) -> None:
    """``niches.model`` names a model of the ensemble and the niche intent mixes name
    registered intents (checked before a run folder is made)."""
    labels = [m.label for m in config.llm.models]
    if config.niches.model is not None and config.niches.model not in labels:
        raise ConfigError(f"niches.model '{config.niches.model}' is not one of llm.models: "
                          f"{sorted(labels)}")
    for key in ("stagnant_intents", "new_intents"):
        check_intent_names(f"niches.{key}", getattr(config.niches, key))


def tagging_model(config: RunConfig, gateway: LLMGateway) -> str:
    """``niches.model``, else the ensemble's cheapest model (``llm/cheapest.py``)."""
    if config.niches.model is not None:
        return gateway.label(config.niches.model, "niches.model")
    return cheapest_label(config.llm.models)


def build_niches(config: RunConfig, selector: Selector, gateway: LLMGateway,
                 recorder: Recorder, objective: Objective,
                 fence: str = "") -> StrategyTagger | None:
    """The strategy tagger of the run (None: no niches), its tag book read from the store and
    handed to a niche-aware selector."""
    aware = isinstance(selector, NicheAware)
    if not (config.niches.enabled or aware):
        return None
    settings = config.niches
    book = TagBook.from_store(recorder.store, settings.new_family_after)
    if aware:
        selector.attach_niches(NicheInputs(settings, book, recorder.store.candidates.sources))
    return StrategyTagger(settings, gateway, recorder, tagging_model(config, gateway),
                          objective, book, fence)
