"""Running each store call on a Weaviate node that answers, with a query's or a write's deadline."""
from __future__ import annotations

import functools
import threading

_on_a_node = threading.local()  # set while a store call runs: calls it makes run as part of it


WRITE_DEADLINE_SECONDS = 300.0  # a write of a batch may take long on a busy machine: only queries are hurried


def on_a_node(method=None, *, deadline: float | None = None):
    """Run a store method on a node that answers (see `NodeSet.call`); nested calls share it.
    Queries get the short deadline; `@on_a_node(deadline=...)` marks slower writes."""
    if method is None:
        return functools.partial(on_a_node, deadline=deadline)

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        if self.nodes is None or getattr(_on_a_node, "active", False):
            return method(self, *args, **kwargs)

        def operation():
            _on_a_node.active = True
            try:
                return method(self, *args, **kwargs)
            finally:
                _on_a_node.active = False

        patient = WRITE_DEADLINE_SECONDS if self.patient else None
        return self.nodes.call(operation, method.__name__, deadline=deadline or patient)
    return run


writing = on_a_node(deadline=WRITE_DEADLINE_SECONDS)
