"""Shared test set-up: offline models, no telemetry, and one real Weaviate server per test run.

The `weaviate_service` fixture starts a real weaviate-server (the same way fieldguide runs its
local server) on free loopback ports with a throw-away data directory, exports
FIELDGUIDE_WEAVIATE_URL / FIELDGUIDE_WEAVIATE_GRPC_PORT so that code and subprocesses under
test talk to it, and stops it when the test run ends. When FIELDGUIDE_WEAVIATE_URL is already
set (e.g. a compose service in CI) that server is used instead.

`weaviate_settings` gives each test Settings pointing at the server with a collection of its
own, dropped afterwards.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import uuid
from pathlib import Path

import pytest

SAMPLE_DOCS = Path(__file__).resolve().parents[1] / "fieldguide" / "sample_docs"

os.environ.setdefault("DISABLE_TELEMETRY", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if "FIELDGUIDE_MODEL_CACHE_DIR" not in os.environ:
    # Models exported for the onnx embedding backend are kept where the user's are, so a test
    # run exports them once at most, not once per test (each test has a data dir of its own).
    from fieldguide.settings import Settings as _Settings

    os.environ["FIELDGUIDE_MODEL_CACHE_DIR"] = str(_Settings().data_dir / "models")


@pytest.fixture(scope="session")
def weaviate_binary():
    """The weaviate-server binary where `fieldguide weaviate build` put it (the configured data
    dir's bin/, Go's bin folders, PATH). Without one the test fails under CI, else skips."""
    from fieldguide import weaviate_server
    from fieldguide.settings import Settings

    binary = weaviate_server.find_binary(Settings(weaviate_url=None))
    if binary is None:
        missing("no weaviate-server binary: run `fieldguide weaviate build` (needs Go) or set FIELDGUIDE_WEAVIATE_URL")
    return binary


@pytest.fixture(scope="session")
def weaviate_service(tmp_path_factory, request):
    """{"url", "grpc_port", "http_port"} of a ready Weaviate for the whole test run."""
    from fieldguide import weaviate_server
    from fieldguide.settings import Settings, get_settings

    if os.environ.get("FIELDGUIDE_WEAVIATE_URL"):
        yield {"url": os.environ["FIELDGUIDE_WEAVIATE_URL"],
               "grpc_port": int(os.environ.get("FIELDGUIDE_WEAVIATE_GRPC_PORT", "50051")), "http_port": None}
        return

    binary = request.getfixturevalue("weaviate_binary")  # only needed when no server is given
    data_dir = tmp_path_factory.mktemp("weaviate-data")  # only the server's data is throw-away
    settings = Settings(data_dir=data_dir, weaviate_url=None, weaviate_binary=binary)
    http_port, grpc_port = weaviate_server.free_port(), weaviate_server.free_port()
    weaviate_server.start(settings, http_port=http_port, grpc_port=grpc_port)
    saved = {name: os.environ.get(name) for name in ("FIELDGUIDE_WEAVIATE_URL", "FIELDGUIDE_WEAVIATE_GRPC_PORT")}
    os.environ["FIELDGUIDE_WEAVIATE_URL"] = f"http://127.0.0.1:{http_port}"
    os.environ["FIELDGUIDE_WEAVIATE_GRPC_PORT"] = str(grpc_port)
    get_settings.cache_clear()
    try:
        yield {"url": os.environ["FIELDGUIDE_WEAVIATE_URL"], "grpc_port": grpc_port, "http_port": http_port}
    finally:
        weaviate_server.stop(settings)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        get_settings.cache_clear()


@pytest.fixture
def weaviate_settings(weaviate_service, tmp_path):
    """Settings pointing at the shared test Weaviate, with a fresh collection for this test."""
    from fieldguide.settings import Settings
    from fieldguide.store import ChunkStore, connect

    collection = "Test" + uuid.uuid4().hex[:12]
    settings = Settings(weaviate_url=weaviate_service["url"], weaviate_grpc_port=weaviate_service["grpc_port"],
                        collection=collection, data_dir=tmp_path / "fieldguide-data")
    yield settings
    client = connect(settings)
    try:
        ChunkStore(client, collection).drop()
    finally:
        client.close()


@contextlib.contextmanager
def ingested_collection(weaviate_service, data_dir, embeddings, *, docs=SAMPLE_DOCS, prefix="Docs", **settings):
    """Settings of a collection of its own holding `docs` (the sample docs), dropped afterwards:
    for a module whose tests all read one index."""
    from fieldguide.settings import Settings
    from fieldguide.store import ChunkStore, connect
    from ingest.pipeline import ingest_folder

    settings = Settings(weaviate_url=weaviate_service["url"], weaviate_grpc_port=weaviate_service["grpc_port"],
                        collection=prefix + uuid.uuid4().hex[:10], data_dir=data_dir, **settings)
    ingest_folder(docs, settings, progress=False, embeddings=embeddings)
    try:
        yield settings
    finally:
        client = connect(settings)
        try:
            ChunkStore(client, settings.collection).drop()
        finally:
            client.close()


@pytest.fixture(scope="session")
def embeddings():
    """The packaged embedding model, loaded once per test run."""
    from fieldguide.embedding import load_embeddings
    from fieldguide.settings import Settings

    return load_embeddings(Settings())


@pytest.fixture(scope="session")
def torch_stack():
    """torch, sentence-transformers and transformers (the `torch` extra), which none of the defaults
    need: a test of the torch backend or a cross-encoder takes this fixture and skips without them,
    unless the run asked for them (FIELDGUIDE_TEST_TORCH=1), where their absence fails it."""
    from fieldguide.errors import TORCH_EXTRA

    for name in ("torch", "sentence_transformers", "transformers"):
        if os.environ.get("FIELDGUIDE_TEST_TORCH") == "1":
            importlib.import_module(name)
        else:
            pytest.importorskip(name, reason=f"needs the torch extra ({TORCH_EXTRA}); FIELDGUIDE_TEST_TORCH=1 "
                                             "makes its absence a failure")


def missing(message: str):
    """Fail under CI (everything the suite needs is installed there), skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """llama-cpp-python's own OpenAI-compatible server (its `server` extra) serving the packaged
    GGUF chat model on a free loopback port, supervised as fieldguide supervises its local model:
    {"base_url", "model"}. Stopped when the run ends."""
    from fieldguide.chat import default_gguf_path
    from fieldguide.errors import ModelUnavailable
    from fieldguide.model_server import MODEL_ALIAS, LocalModelServer

    if importlib.util.find_spec("starlette_context") is None or importlib.util.find_spec("uvicorn") is None:
        missing("llama-cpp-python's server extra is not installed (pip install 'llama-cpp-python[server]')")
    try:
        server = LocalModelServer(default_gguf_path(), n_ctx=4096, n_threads=os.cpu_count() or 2,
                                  log_dir=tmp_path_factory.mktemp("llama-server"), ready_timeout=180)
        server.ensure_ready()
    except ModelUnavailable as exc:
        missing(str(exc))
    try:
        yield {"base_url": server.base_url, "model": MODEL_ALIAS}
    finally:
        server.stop()
