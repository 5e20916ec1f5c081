"""embed: the question as a vector, with the same model the index was built with.

The store's manifest names the embedding model of the index; a mismatch is refused
(`ModelMismatch`, naming `--reindex`) before any vector is compared.
"""
from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from graph.resources import resources_for
from graph.state import question_of
from graph.timing import timed


def load(config: RunnableConfig) -> None:
    """The index checked against the model (once per process) and the model loaded."""
    resources = resources_for(config)
    resources.check_manifest()
    resources.embeddings


@timed("embed", untimed=load)
def embed(state: dict, config: RunnableConfig = None) -> dict:
    vector = resources_for(config).embeddings.embed_query(question_of(state))
    return {"query_vector": [float(x) for x in vector]}
