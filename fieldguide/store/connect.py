"""Connecting: the configured Weaviate nodes (or the local server, started when needed), their
clients, and `open_store`."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

from fieldguide.errors import StoreUnavailable
from fieldguide.store.chunk_store import ChunkStore


# --- connecting ---------------------------------------------------------------------------

def _client_for(node, settings):
    import weaviate
    from weaviate.classes.init import AdditionalConfig, Auth, Timeout

    config = AdditionalConfig(timeout=Timeout(init=10, query=60, insert=180))
    auth = Auth.api_key(settings.weaviate_api_key) if settings.weaviate_api_key else None
    return weaviate.connect_to_custom(
        http_host=node.host, http_port=node.http_port, http_secure=node.secure,
        grpc_host=node.host, grpc_port=node.grpc_port, grpc_secure=node.secure,
        auth_credentials=auth, additional_config=config)


def configured_nodes(settings) -> list:
    """The nodes of `FIELDGUIDE_WEAVIATE_URL`, or of the local server (started when needed)."""
    from fieldguide import weaviate_nodes, weaviate_server

    if settings.weaviate_url:
        return weaviate_nodes.nodes_from_urls(settings.weaviate_url, settings.weaviate_grpc_port,
                                              settings.weaviate_grpc_ports)
    return [weaviate_nodes.Node(weaviate_server.HOST, node["http_port"], node["grpc_port"])
            for node in weaviate_server.start(settings)["nodes"]]


def connect(settings):
    """A weaviate-client v4 client for the configured (or locally managed) server; its first node."""
    node = configured_nodes(settings)[0]
    try:
        return _client_for(node, settings)
    except Exception as exc:
        raise _unreachable(settings, node, exc) from exc


def connect_nodes(settings):
    """A NodeSet over every configured node (the local server is started when needed)."""
    from fieldguide.weaviate_nodes import NodeSet

    nodes = configured_nodes(settings)

    def make_client(node):
        try:
            return _client_for(node, settings)
        except Exception as exc:
            raise _unreachable(settings, node, exc) from exc

    node_set = NodeSet(nodes, make_client, timeout=settings.weaviate_timeout_seconds)
    errors = []
    for _ in nodes:  # connect now, to a node that answers: a bad address is reported at once
        try:
            node_set.client
            return node_set
        except StoreUnavailable as exc:
            errors.append(exc)
            node_set._mark_down(node_set.node, exc)
            node_set._current = (node_set._current + 1) % len(nodes)
    node_set.close()
    raise errors[0]


def _unreachable(settings, node, exc: Exception) -> StoreUnavailable:
    if settings.weaviate_url:
        return StoreUnavailable(
            f"Cannot reach Weaviate at {node.label}: {_short(exc)}. "
            "Start it (e.g. `docker compose up -d weaviate`), fix FIELDGUIDE_WEAVIATE_URL / "
            "FIELDGUIDE_WEAVIATE_GRPC_PORT, or unset FIELDGUIDE_WEAVIATE_URL to let fieldguide run "
            "a local server.")
    return StoreUnavailable(
        f"The local Weaviate server did not answer ({_short(exc)}). Try `fieldguide weaviate stop` "
        f"then `fieldguide weaviate start`, or set FIELDGUIDE_WEAVIATE_URL.")


def _short(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("..." if len(text) > 300 else "")


@contextlib.contextmanager
def open_store(settings=None, collection: str | None = None) -> Iterator[ChunkStore]:
    """Yield a ChunkStore over the configured nodes; their clients are closed on exit."""
    if settings is None:
        from fieldguide.settings import get_settings

        settings = get_settings()
    nodes = connect_nodes(settings)
    try:
        yield ChunkStore(None, collection or settings.collection, nodes=nodes,
                         replication_factor=settings.replication_factor,
                         consistency_level=settings.consistency_level if settings.replication_factor > 1 else None)
    finally:
        nodes.close()
