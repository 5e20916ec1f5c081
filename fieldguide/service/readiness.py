"""Readiness: the store is reachable, its index was built with the configured embedding model
and backend, and a vector search finds the stored chunks.

A readiness check is a plain callable returning None when ready, or one sentence saying
why not. The service runs it in a worker thread with a timeout, and caches the answer
for a moment so a busy probe cannot hammer Weaviate.
"""
from __future__ import annotations

from typing import Callable

from fieldguide.errors import FieldguideError
from fieldguide.settings import Settings

ReadinessCheck = Callable[[], "str | None"]


def store_readiness(settings: Settings, resources=None) -> ReadinessCheck:
    """Check through `resources.store` (the graph's own connection) or a fresh `open_store`."""

    def check_store(store) -> str | None:
        from fieldguide.embedding import embedding_backend_id, embedding_model_id

        if not store.ready():
            return "Weaviate is not reachable"
        manifest = store.check_manifest(embedding_model_id(settings), embedding_backend_id(settings))
        return store.unsearchable_reason(int(manifest["dimension"] or 0)) if manifest else None

    def check() -> str | None:
        try:
            if resources is not None:
                return check_store(resources.store)
            from fieldguide.store import open_store

            with open_store(settings) as store:
                return check_store(store)
        except FieldguideError as exc:
            return str(exc)
        except ImportError as exc:
            return f"the store is not available in this installation ({exc})"
        except Exception as exc:  # a probe must answer, whatever the client library raises
            return f"Weaviate is not reachable: {type(exc).__name__}: {exc}"

    return check


def index_calibration(settings: Settings, resources=None) -> Callable[[], "dict | None"]:
    """The calibration the pipeline uses (`fieldguide.calibration`), for `/readyz`; None when it
    cannot be had (the readiness reason then says why)."""

    def describe() -> dict | None:
        try:
            if resources is not None:
                return resources.calibration.to_dict()
            from fieldguide.store import open_store

            with open_store(settings) as store:
                return (store.manifest() or {}).get("calibration")
        except Exception:  # readiness reports the failure; the description is only extra
            return None

    return describe
