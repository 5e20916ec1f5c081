"""embed: the question as a vector, with the same model the index was built with.

The store's manifest names the embedding model of the index; a mismatch is refused
(`ModelMismatch`, naming `--reindex`) before any vector is compared.
"""
from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from graph.resources import resources_for
from graph.state import question_of
from graph.timing import Stopwatch, with_timing


def embed(state: dict, config: RunnableConfig = None) -> dict:
    resources = resources_for(config)
    resources.check_manifest()
    embeddings = resources.embeddings
    with Stopwatch() as sw:
        vector = embeddings.embed_query(question_of(state))
    return {"query_vector": [float(x) for x in vector], "timings_ms": with_timing(state, "embed", sw.ms)}
