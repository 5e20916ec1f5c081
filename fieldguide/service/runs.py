"""Graph runs for the routes that answer in one call: the OpenAI-compatible chat and the MCP tools.

Like conversation turns, they run on the turn engine's thread (engine.py), never on the loop
that serves HTTP: a run's tokens cross back to the caller's loop through a queue. A run gets a
thread of its own in the graph's checkpointer (a compiled graph with one needs a `thread_id`),
forgotten when the run ends; earlier turns come with the input (`messages`).
"""
from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from fieldguide.service.engine import TurnEngine


@dataclass
class GraphRunner:
    graph: Any  # the whole pipeline, question to answer
    retrieval_graph: Any  # question to context, no generation (its final state: every stage)
    configurable: dict[str, Any] = field(default_factory=dict)  # resources and the like, for every run
    engine: TurnEngine = field(default_factory=TurnEngine)
    checkpointer: Any = None  # the graph's, to forget a run's thread

    def _config(self, options: dict[str, Any] | None, thread_id: str | None = None) -> dict[str, Any]:
        configurable = {**(options or {}), **self.configurable}
        if thread_id:
            configurable["thread_id"] = thread_id
        return {"configurable": configurable, "run_name": "one-call"}

    async def retrieve(self, question: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """The retrieval graph's final state for `question` (search to reassembled context)."""
        graph = self.retrieval_graph
        thread_id = "call-" + secrets.token_hex(12) if getattr(graph, "checkpointer", None) else None
        run = graph.ainvoke({"question": question}, self._config(options, thread_id))
        try:
            return await asyncio.wrap_future(self.engine.submit(run))
        finally:
            self._forget(graph, thread_id)

    async def answer(self, question: str, options: dict[str, Any] | None = None,
                     history: list | None = None) -> dict[str, Any]:
        """The final state of a whole run (no tokens)."""
        final: dict[str, Any] = {}
        async for kind, payload in self.stream(question, options, history):
            if kind == "state":
                final = payload
        return final

    async def stream(self, question: str, options: dict[str, Any] | None = None,
                     history: list | None = None) -> AsyncIterator[tuple[str, Any]]:
        """("token", text) as the answer streams, then ("state", final state). Leaving early
        (a client that went away) cancels the run."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        graph = self.graph
        thread_id = "call-" + secrets.token_hex(12) if getattr(graph, "checkpointer", None) else None
        graph_input: dict[str, Any] = {"question": question}
        if history:
            graph_input["messages"] = list(history)
        config = self._config(options, thread_id)

        def put(item: tuple[str, Any]) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        async def produce() -> None:
            final: dict[str, Any] = {}
            try:
                async for mode, chunk in graph.astream(graph_input, config, stream_mode=["custom", "values"]):
                    if mode == "custom":  # the generate node writes {"token": text} for every token
                        if isinstance(chunk, dict) and isinstance(chunk.get("token"), str) and chunk["token"]:
                            put(("token", chunk["token"]))
                    else:
                        final = chunk
                put(("state", dict(final)))
            except BaseException as exc:  # the caller re-raises it on its own loop
                put(("error", exc))
                raise
            finally:
                self._forget(graph, thread_id)

        running = self.engine.submit(produce())
        try:
            while True:
                kind, payload = await queue.get()
                if kind == "error":
                    raise payload
                yield kind, payload
                if kind == "state":
                    return
        finally:
            if not running.done():
                running.cancel()

    def _forget(self, graph, thread_id: str | None) -> None:
        saver = self.checkpointer or getattr(graph, "checkpointer", None)
        if thread_id and saver is not None and hasattr(saver, "delete_thread"):
            saver.delete_thread(thread_id)
