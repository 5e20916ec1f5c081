"""The local chat model runs in a supervised process of its own, on any x86-64 CPU with AVX2.

A crash of native code there (an instruction the CPU traps on, a segmentation fault, a kill) ends
the answer in flight with a clear error and never the caller's process; the next call starts the
model again. The packaged GGUF is served by llama.cpp's OpenAI-compatible server and reached
through ChatOpenAI, the path every endpoint takes.
"""
from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from fieldguide.errors import ModelCrashed, ModelUnavailable
from fieldguide.settings import Settings

pytestmark = pytest.mark.models

DECODE_IN_A_CHILD = textwrap.dedent("""
    import sys
    from llama_cpp import Llama
    llama = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=2, verbose=False)
    tokens = llama.tokenize(b"The documentation says")
    llama.eval(tokens)  # llama_decode over the prompt: the CPU kernels run here
    token = llama.sample(temp=0.0)
    llama.eval([token])
    print("decoded", len(tokens) + 1)
    llama.close()
""")


def test_the_native_library_loads_and_decodes_in_a_child_process():
    """llama.cpp's CPU code runs on this machine. Were it compiled for another CPU (GGML_NATIVE on
    a build host with AMX or AVX-512 that this one lacks or traps on), the child would die with
    SIGILL: the test then fails with that signal named, and pytest itself lives on."""
    from fieldguide.chat import default_gguf_path
    from fieldguide.model_server import exit_description

    result = subprocess.run([sys.executable, "-c", DECODE_IN_A_CHILD, default_gguf_path()],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        pytest.fail(f"llama.cpp could not decode in a child process: it {exit_description(result.returncode)}. "
                    "A SIGILL means the library was compiled for another CPU: rebuild it with "
                    f"scripts/setup.sh (portable flags).\n{result.stderr[-2000:]}")
    assert result.stdout.startswith("decoded ")


def test_the_child_of_a_portable_build_names_no_cpu_specific_kernel():
    """The library in the environment was built without GGML_NATIVE: its system info lists no
    AVX-512 or AMX kernels, whatever this machine has."""
    script = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    info = result.stdout
    assert "AVX2 = 1" in info
    for flag in ("AVX512 = 1", "AMX_INT8 = 1", "AVX512_BF16 = 1"):
        assert flag not in info, f"llama.cpp was compiled for a specific CPU ({flag}): {info}"


def local_model(tmp_path, **overrides):
    from fieldguide.chat import load_chat_model

    values = {"chat_provider": "local", "chat_context_window": 1024, "max_answer_tokens": 16, "temperature": 0.0,
              "data_dir": tmp_path, **overrides}
    settings = Settings(**values)
    return load_chat_model(settings)


def test_the_local_model_streams_real_tokens_from_a_process_of_its_own(tmp_path):
    from langchain_openai import ChatOpenAI

    model = local_model(tmp_path)
    assert isinstance(model, ChatOpenAI)  # one chat code path, whatever serves the model

    async def collect():
        return [chunk.content async for chunk in model.astream(
            [SystemMessage("Answer in one short sentence."), HumanMessage("What colour is the sky?")])]

    chunks = asyncio.run(collect())
    assert len(chunks) > 1 and "".join(chunks).strip()
    server = model.server
    assert server.state() == "ready" and server.pid not in (None, os.getpid())
    with open(f"/proc/{server.pid}/environ", "rb") as handle:
        environ = dict(item.split(b"=", 1) for item in handle.read().split(b"\0") if b"=" in item)
    # its OpenMP threads sleep at a wait (unless the environment says otherwise)
    assert environ[b"OMP_WAIT_POLICY"] == os.environ.get("OMP_WAIT_POLICY", "PASSIVE").encode()


def test_the_services_own_host_and_port_settings_do_not_move_the_model_process(tmp_path, monkeypatch):
    """llama.cpp's server reads HOST, PORT and CONFIG_FILE from its environment ahead of its command
    line: `PORT=9000 bash scripts/demo.sh` made the model child bind the service's own port, fail,
    and every answer end in "the answer model is not available"."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    monkeypatch.setenv("PORT", str(taken.getsockname()[1]))
    monkeypatch.setenv("HOST", "127.0.0.1")
    monkeypatch.setenv("CONFIG_FILE", str(tmp_path / "no-such-config.json"))
    try:
        model = local_model(tmp_path, max_answer_tokens=4)
        answer = "".join(chunk.content for chunk in model.stream([HumanMessage("Say hi")]))
    finally:
        taken.close()
    server = model.server
    assert answer.strip() and server.state() == "ready", server.last_exit
    assert server.port != int(os.environ["PORT"])
    with open(f"/proc/{server.pid}/environ", "rb") as handle:
        names = {item.split(b"=", 1)[0] for item in handle.read().split(b"\0") if b"=" in item}
    assert not names & {b"PORT", b"HOST", b"CONFIG_FILE"}


def test_a_killed_model_process_fails_the_answer_in_flight_and_the_next_call_restarts_it(tmp_path):
    model = local_model(tmp_path, max_answer_tokens=200)
    server = model.server
    server.ensure_ready()
    restarts = server.restarts
    stream = model.stream([HumanMessage("Tell a long story about a boat.")])
    assert next(stream).content is not None  # the model is generating
    os.kill(server.pid, signal.SIGKILL)
    with pytest.raises(ModelCrashed, match="killed by SIGKILL"):
        for _ in stream:
            pass
    assert server.state() == "crashed" and server.last_exit == "killed by SIGKILL"
    answer = "".join(chunk.content for chunk in model.stream([HumanMessage("Say hi")], max_tokens=4))
    assert answer.strip() and server.restarts == restarts + 1 and server.state() == "ready"


def test_concurrent_streams_queue_in_the_model_process_and_all_finish(tmp_path):
    """The server answers one request at a time; it must neither interrupt one answer for the next
    (llama.cpp's server does by default) nor deadlock."""
    model = local_model(tmp_path, max_answer_tokens=12)

    async def one(index: int) -> str:
        return "".join([chunk.content async for chunk in model.astream([HumanMessage(f"Count to {index + 3}")])])

    async def main() -> list[str]:
        return await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(3))), timeout=300)

    answers = asyncio.run(main())
    assert len(answers) == 3 and all(a.strip() for a in answers)


def test_a_file_that_is_no_model_fails_with_the_reason_and_nothing_else_dies(tmp_path):
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"this is not a GGUF file\n" * 100)
    model = local_model(tmp_path, chat_model=str(bogus))
    started = time.monotonic()
    with pytest.raises(ModelUnavailable, match="while starting"):
        model.invoke([HumanMessage("Hello?")])
    assert time.monotonic() - started < 120
    assert model.server.state() == "crashed"


def test_a_missing_model_file_is_named(tmp_path):
    with pytest.raises(ModelUnavailable, match="not found"):
        local_model(tmp_path, chat_model=str(tmp_path / "missing.gguf"))


def test_the_model_process_outlives_the_thread_that_first_asked_for_it(tmp_path):
    """Linux signals a child whose parent *thread* ends (PR_SET_PDEATHSIG): a model started from a
    short-lived thread (a warm-up, a worker) must not be killed when that thread is done."""
    import threading

    model = local_model(tmp_path, max_answer_tokens=4, chat_context_window=512)
    server = model.server
    server.stop()
    starter = threading.Thread(target=server.ensure_ready)
    starter.start()
    starter.join()
    pid = server.pid
    time.sleep(1.0)  # a signal from the ended thread would have arrived by now
    assert server.state() == "ready" and server.pid == pid, server.last_exit
    answer = "".join(chunk.content for chunk in model.stream([HumanMessage("Say hi")]))
    assert answer.strip() and server.pid == pid and server.restarts == 0


def test_the_local_model_stops_at_the_length_each_request_asks_for(tmp_path):
    """llama.cpp's server reads `max_tokens` only; sent the newer `max_completion_tokens` alone, it
    would write until the context is full."""
    model = local_model(tmp_path, max_answer_tokens=6)
    prompt = [HumanMessage("Tell a very long story about a boat, with many chapters.")]

    def tokens(runnable) -> int:  # the server streams one token a chunk
        return sum(1 for chunk in runnable.stream(prompt) if chunk.content)

    assert 0 < tokens(model) <= 6
    assert 0 < tokens(model.bind(max_tokens=3)) <= 3


def test_endpoints_other_than_openais_are_sent_the_length_as_max_tokens_too():
    from fieldguide.chat import load_chat_model

    def payload(base_url):
        settings = Settings(chat_provider="openai", chat_model="m", openai_base_url=base_url, max_answer_tokens=7)
        return load_chat_model(settings)._get_request_payload([HumanMessage("hi")])

    assert payload("http://127.0.0.1:8080/v1")["max_tokens"] == 7
    assert "max_completion_tokens" not in payload("http://127.0.0.1:8080/v1")
    compatible = payload("https://llm.example.com/v1")
    assert compatible["max_tokens"] == compatible["max_completion_tokens"] == 7
    official = payload("https://api.openai.com/v1")
    assert official["max_completion_tokens"] == 7 and "max_tokens" not in official
