"""The Weaviate nodes fieldguide talks to, and what it does when one stops answering.

A store is one node or several: `FIELDGUIDE_WEAVIATE_URL` may list nodes separated by commas
(`http://h1:8080,http://h2:8080`, gRPC on `FIELDGUIDE_WEAVIATE_GRPC_PORT`, or one port per
node in `FIELDGUIDE_WEAVIATE_GRPC_PORTS`), and `fieldguide weaviate start --nodes 3` runs a
local cluster whose nodes are all known. Every call of the store runs through `NodeSet.call`:

* with a deadline: weaviate-client retries an unreachable gRPC node for about a minute
  (backing off 1, 2, 4 ... 32 s), so a call waits at most `weaviate_timeout_seconds` for a
  node and then gives up on it; the first node tried is given only `FAILOVER_SECONDS` when
  another could answer instead (the others get the full time: just after a node dies, the
  survivors may be slow to answer a quorum read while they find out);
* a node that failed is left alone until a readiness check in the background (every
  `PROBE_SECONDS`) finds it back: calls go to a node that answers, and while none does they fail
  at once with a plain message (a lone node is then tried again every `RETRY_AFTER_SECONDS`);
* reads and upserts are idempotent (deterministic object ids), so a call that failed on one node
  is simply run again on the next.
"""
from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar
from urllib.parse import urlparse

from fieldguide.errors import StoreUnavailable

log = logging.getLogger("fieldguide.store")

T = TypeVar("T")
FAILOVER_SECONDS = 1.5
RETRY_AFTER_SECONDS = 2.0
PROBE_SECONDS = 1.0
UNREACHABLE = "The documentation index (Weaviate) is not reachable right now. Please try again in a moment."


@dataclass(frozen=True)
class Node:
    host: str
    http_port: int
    grpc_port: int
    secure: bool = False

    @property
    def label(self) -> str:
        return f"{'https' if self.secure else 'http'}://{self.host}:{self.http_port} (gRPC {self.grpc_port})"


def nodes_from_urls(urls: str, grpc_port: int | None, grpc_ports: str | None) -> list[Node]:
    """Nodes named by a comma-separated `FIELDGUIDE_WEAVIATE_URL`."""
    parsed = [urlparse(u if "://" in u else f"http://{u}") for u in (part.strip() for part in urls.split(",")) if u]
    ports = [int(p) for p in (grpc_ports or "").split(",") if p.strip()]
    if ports and len(ports) != len(parsed):
        raise StoreUnavailable(f"FIELDGUIDE_WEAVIATE_GRPC_PORTS names {len(ports)} ports for {len(parsed)} "
                               "Weaviate URLs: give one port per URL, in the same order.")
    nodes = []
    for n, url in enumerate(parsed):
        secure = url.scheme == "https"
        nodes.append(Node(url.hostname or "localhost", url.port or (443 if secure else 8080),
                          ports[n] if ports else (grpc_port or 50051), secure))
    return nodes


def is_node_failure(exc: BaseException) -> bool:
    """A node that is down, unreachable or too slow, as opposed to a request it refused."""
    from weaviate.exceptions import WeaviateClosedClientError, WeaviateConnectionError, WeaviateTimeoutError

    if isinstance(exc, (TimeoutError, concurrent.futures.TimeoutError, ConnectionError, WeaviateConnectionError,
                        WeaviateTimeoutError, WeaviateClosedClientError)):
        return True
    try:
        import httpx

        if isinstance(exc, httpx.TransportError):
            return True
    except ImportError:
        pass
    text = str(exc)
    # "the client connection is closing", "Socket closed": a surviving node answers 500 while its
    # link to a peer that died is torn down; "non-existing index": a node that has read its schema
    # but is still loading the collections' shards (the first seconds after a start)
    return any(marker in text for marker in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "failed to connect",
                                             "Connection refused", "connection refused",
                                             "the client connection is closing", "Socket closed",
                                             "tried to browse non-existing index"))


class NodeSet:
    """A client per node, made when first needed; one node in use, the next on failure."""

    def __init__(self, nodes: list[Node], make_client: Callable[[Node], Any], *, timeout: float = 4.0) -> None:
        if not nodes:
            raise StoreUnavailable("No Weaviate node is configured.")
        self.nodes = nodes
        self.make_client = make_client
        self.timeout = timeout
        self._clients: dict[Node, Any] = {}
        self._down_until: dict[Node, float] = {}
        self._current = 0
        self._closed = False
        self._lock = threading.RLock()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="fieldguide-weaviate")

    @property
    def node(self) -> Node:
        return self.nodes[self._current]

    @property
    def client(self):
        """The client of the node in use (connecting to it, or failing over, if needed)."""
        with self._lock:
            return self._client_for(self.node)

    def _client_for(self, node: Node):
        client = self._clients.get(node)
        if client is None:
            client = self._clients[node] = self.make_client(node)
        return client

    def _candidates(self) -> list[int]:
        """Nodes to try, the one in use first: those up; when none is, those due for another try."""
        now = time.monotonic()
        order = [(self._current + k) % len(self.nodes) for k in range(len(self.nodes))]
        up = [i for i in order if self.nodes[i] not in self._down_until]
        return up or [i for i in order if self._down_until[self.nodes[i]] <= now]

    def _mark_down(self, node: Node, exc: BaseException) -> None:
        log.warning("Weaviate node %s failed: %s", node.label, " ".join(str(exc).split())[:300])
        with self._lock:
            watching = node in self._down_until
            self._down_until[node] = time.monotonic() + RETRY_AFTER_SECONDS
            client = self._clients.pop(node, None)
        if client is not None:  # a fresh connection next time, once the node is back
            self._pool.submit(_close_quietly, client)
        if not watching:
            threading.Thread(target=self._watch, args=(node,), name="fieldguide-weaviate-probe", daemon=True).start()

    def _watch(self, node: Node) -> None:
        """Check a failed node's readiness now and then; once it answers, calls may use it again."""
        while not self._closed:
            time.sleep(PROBE_SECONDS)
            if _node_ready(node):
                with self._lock:
                    self._down_until.pop(node, None)
                log.info("Weaviate node %s answers again", node.label)
                return

    def call(self, operation: Callable[[], T], what: str = "query", deadline: float | None = None) -> T:
        """Run `operation` (which uses `self.client`) on a node that answers, within the deadline
        (`weaviate_timeout_seconds` for queries, shorter for a first node when others could answer)."""
        with self._lock:
            candidates = self._candidates()
        if not candidates:
            raise StoreUnavailable(UNREACHABLE)
        last: BaseException | None = None
        for attempt, index in enumerate(candidates):
            if deadline is not None:
                wait = deadline
            elif attempt == 0 and len(candidates) > 1:
                wait = min(FAILOVER_SECONDS, self.timeout)
            else:
                wait = self.timeout
            node = self.nodes[index]
            with self._lock:
                self._current = index
                try:
                    self._client_for(node)
                except Exception as exc:
                    last = exc
                    self._mark_down(node, exc)
                    continue
            future = self._pool.submit(operation)
            try:
                return future.result(timeout=wait)
            except Exception as exc:
                if not is_node_failure(exc):
                    raise
                last = exc
                self._mark_down(node, exc)
        log.warning("no Weaviate node answered the %s: %s", what, last)
        raise StoreUnavailable(UNREACHABLE) from last

    def reachable(self) -> bool:
        """Whether some node answers its readiness check (a quick HTTP request each)."""
        return any(_node_ready(node) for node in self.nodes)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            _close_quietly(client)
        self._pool.shutdown(wait=False, cancel_futures=True)


def _node_ready(node: Node, timeout: float = 1.0) -> bool:
    import urllib.request

    scheme = "https" if node.secure else "http"
    try:
        with urllib.request.urlopen(f"{scheme}://{node.host}:{node.http_port}/v1/.well-known/ready",
                                    timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


def _close_quietly(client) -> None:
    try:
        client.close()
    except Exception:
        pass
