"""Quick commands: each command imports what its work needs and nothing heavier.

Every command runs for real (against the test Weaviate, with the packaged models) under
`python -X importtime`, and the modules it imported are read from that report. torch and
sentence-transformers cost seconds to import; the default onnx backend needs neither.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from store_corpus import write_corpus

pytestmark = [pytest.mark.weaviate, pytest.mark.models]

TORCH_STACK = {"torch", "sentence_transformers", "transformers", "langchain_huggingface"}


def imported_by(*args: str, env_update: dict) -> tuple[set[str], subprocess.CompletedProcess]:
    env = dict(os.environ, **env_update)
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "fieldguide.cli", *args], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    modules = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
               if line.startswith("import time:") and line.count("|") == 2}
    return modules, result


def test_chunks_imports_neither_the_store_nor_a_model_runtime(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    modules, _ = imported_by("chunks", str(docs), env_update={})
    assert not modules & (TORCH_STACK | {"weaviate", "onnxruntime", "openvino", "pydantic_settings", "langgraph",
                                         "numpy"})


def test_ingest_retrieve_and_ask_do_without_the_torch_stack(tmp_path, weaviate_settings, embeddings):
    # `embeddings`: the model is exported before (where sentence-transformers is installed, the
    # one-off export checks its graph against it; the commands' own work never needs it)
    docs = write_corpus(tmp_path / "docs")
    env = {"FIELDGUIDE_COLLECTION": weaviate_settings.collection, "FIELDGUIDE_EMBEDDING_BACKEND": "onnx",
           "FIELDGUIDE_MAX_ANSWER_TOKENS": "4"}
    modules, result = imported_by("ingest", str(docs), "--json", env_update=env)
    assert json.loads(result.stdout.strip().splitlines()[-1])["texts_embedded"] > 0
    # the default runtime of the onnx backend (OpenVINO, installed with fieldguide)
    assert "openvino" in modules and not modules & (TORCH_STACK | {"langgraph", "langchain_core", "llama_cpp"})

    (docs / "reports.md").write_text("# Reports\n\nReports show spending by category.\n", encoding="utf-8")
    modules, result = imported_by("ingest", str(docs), "--json", env_update=env)
    assert json.loads(result.stdout.strip().splitlines()[-1])["files_changed"] == 1
    assert not modules & TORCH_STACK

    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "Where is the Balance field?"}) + "\n")
    modules, result = imported_by("retrieve", "--batch", str(questions), env_update=env)
    assert json.loads(result.stdout)["context"]
    assert not modules & (TORCH_STACK | {"llama_cpp", "langchain_openai", "openai"})

    modules, result = imported_by("ask", "Where is the Balance field?", env_update=env)
    assert "Sources:" in result.stdout
    # the packaged model answers from a process of its own, over the OpenAI-compatible API
    assert "langchain_openai" in modules and not modules & (TORCH_STACK | {"llama_cpp"})
