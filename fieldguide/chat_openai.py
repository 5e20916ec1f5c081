"""The chat model classes over `langchain_openai.ChatOpenAI`. Imported on first use only
(`fieldguide.chat.load_chat_model`): importing langchain_openai costs about a second, which the
commands that answer nothing do not pay."""
from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any, AsyncIterator, Iterator
from urllib.parse import urlsplit

from langchain_openai import ChatOpenAI
from pydantic import PrivateAttr

_DONE = object()


@functools.lru_cache(maxsize=16)
def _length_limit_names(base_url: str | None) -> tuple[str, ...]:
    """The names an endpoint is sent the answer's length limit under. OpenAI's own API (and
    Azure's) wants `max_completion_tokens` and refuses `max_tokens` for its newer models; many
    OpenAI-compatible servers read only `max_tokens` (llama.cpp's Python server among them, and
    ignoring the limit lets an answer run until the context is full): they get both, the local
    server on loopback `max_tokens` alone."""
    host = urlsplit(base_url or "").hostname or ""
    if not base_url or host == "api.openai.com" or host.endswith(".openai.azure.com"):
        return ("max_completion_tokens",)
    if host in ("127.0.0.1", "localhost", "::1"):
        return ("max_tokens",)
    return ("max_completion_tokens", "max_tokens")


class LoopSafeChatOpenAI(ChatOpenAI):
    """ChatOpenAI whose async calls run its synchronous client in a worker thread.

    ChatOpenAI's async client belongs to the event loop that first used it, and the service
    answers on more than one loop (its turn engine's, the HTTP server's for LangServe, a
    benchmark's `asyncio.run` per question): a second loop then fails with "bound to a
    different event loop". The synchronous client serves every thread. Tokens are handed over
    through the loop's queue as they come; leaving the stream early closes the HTTP stream,
    which stops the generation.
    """

    def _get_request_payload(self, *args, **kwargs) -> dict:
        # langchain-openai sends the length limit as `max_completion_tokens`; see `_length_limit_names`
        payload = super()._get_request_payload(*args, **kwargs)
        limit = payload.pop("max_completion_tokens", None)
        if limit is not None:
            for name in _length_limit_names(self.openai_api_base):
                payload.setdefault(name, limit)
        return payload

    def _before_call(self) -> None:
        """Runs in the worker thread before each call (the local model makes sure its process answers)."""

    def _failure(self, exc: BaseException) -> BaseException:
        """What a failed call raises (the local model names its process's crash)."""
        return exc

    def _call_stream(self, args, kwargs) -> Iterator:
        self._before_call()
        try:
            yield from ChatOpenAI._stream(self, *args, **kwargs)
        except Exception as exc:
            failure = self._failure(exc)
            if failure is exc:
                raise
            raise failure from exc

    def _stream(self, *args, **kwargs) -> Iterator:
        return self._call_stream(args, kwargs)

    def _generate(self, *args, **kwargs):
        self._before_call()
        try:
            return ChatOpenAI._generate(self, *args, **kwargs)
        except Exception as exc:
            failure = self._failure(exc)
            if failure is exc:
                raise
            raise failure from exc

    async def _agenerate(self, *args, **kwargs):
        kwargs.pop("run_manager", None)  # the async callback manager belongs to the caller's loop
        return await asyncio.to_thread(self._generate, *args, **kwargs)

    async def _astream(self, *args, **kwargs) -> AsyncIterator:
        kwargs.pop("run_manager", None)
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue = asyncio.Queue()
        cancelled = threading.Event()

        def put(item) -> None:
            try:
                loop.call_soon_threadsafe(chunks.put_nowait, item)
            except RuntimeError:  # the loop closed: nobody reads any more
                cancelled.set()

        def produce() -> None:
            stream = self._call_stream(args, kwargs)
            try:
                for chunk in stream:
                    if cancelled.is_set():
                        break
                    put(chunk)
                put(_DONE)
            except BaseException as exc:  # handed to the consumer, raised there
                put(exc)
            finally:
                stream.close()

        threading.Thread(target=produce, name="chat-stream", daemon=True).start()
        try:
            while (item := await chunks.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            cancelled.set()  # the turn was cancelled or failed: the thread closes the stream


class SupervisedChatOpenAI(LoopSafeChatOpenAI):
    """ChatOpenAI over the local llama.cpp server child (`fieldguide.model_server`): each call
    first makes sure the process answers (starting it again after a crash), and a call the
    process died under fails with `ModelCrashed`."""

    _server: Any = PrivateAttr(default=None)

    @property
    def server(self):
        return self._server

    @property
    def n_threads(self) -> int:
        return self._server.n_threads

    def _before_call(self) -> None:
        self._server.ensure_ready()

    def _failure(self, exc: BaseException) -> BaseException:
        return self._server.failure(exc)
