"""The local model's process dies mid-answer (kill -9, as the OOM killer or a native crash would):
the answer in flight ends with one `error` event that says so, the service keeps serving, and the
next question starts the model again and is answered. `ask --batch` writes an error line for the
item it was answering and goes on."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import httpx
import pytest

from fieldguide.service import create_app
from fieldguide.service.failures import MODEL_CRASHED
from fieldguide_testing.serving import SAMPLE_DOCS, serve
from tests.service.sse import iter_sse

pytestmark = [pytest.mark.weaviate, pytest.mark.models]


@pytest.fixture
def sample_settings(weaviate_settings):
    from ingest.pipeline import ingest_folder

    # verify=off streams the model's tokens as they come, so the kill lands mid-generation
    settings = weaviate_settings.model_copy(update={"docs_dir": SAMPLE_DOCS, "max_answer_tokens": 200,
                                                    "verify": "off"})
    ingest_folder(SAMPLE_DOCS, settings, progress=False)
    return settings


def model_pid(settings) -> int:
    """The pid of the model process these settings' service talks to (other tests of this process
    may have left servers for other models or context windows running)."""
    from fieldguide.chat import local_model_server

    server = local_model_server(settings)
    assert server.alive()
    return server.pid


def test_killing_the_model_mid_answer_ends_that_answer_only(sample_settings):
    app = create_app(sample_settings)
    with serve(app) as base, httpx.Client(timeout=300) as client:
        started = client.post(base + "/conversations", json={"question": "Which fields are on the booking form?"})
        events, killed = [], None
        with client.stream("GET", base + started.json()["stream_url"]) as response:
            for event in iter_sse(response):
                events.append(event)
                tokens = [e for e in events if e.event == "token"]
                if killed is None and len(tokens) >= 2:  # the evidence, then the model's first token
                    killed = model_pid(sample_settings)
                    os.kill(killed, signal.SIGKILL)
        assert killed is not None, [e.event for e in events]
        errors = [e for e in events if e.event == "error"]
        assert len(errors) == 1 and events[-1].event == "error"
        assert errors[0].json["message"] == MODEL_CRASHED
        assert not [e for e in events if e.event == "done"]

        # The same service, not restarted, answers the next question with a new model process.
        assert client.get(base + "/healthz").status_code == 200
        follow = client.post(base + "/conversations", json={"question": "How is the price of a booking made up?"})
        with client.stream("GET", base + follow.json()["stream_url"]) as response:
            events = list(iter_sse(response))
        assert events[-1].event == "done", events[-1]
        assert "".join(e.json["text"] for e in events if e.event == "token").strip()
        ready = client.get(base + "/readyz").json()
        assert ready["model"]["state"] == "ready" and ready["model"]["restarts"] >= 1
        assert ready["model"]["last_exit"] == "killed by SIGKILL"
        assert model_pid(sample_settings) != killed


def test_ask_batch_writes_an_error_line_for_the_item_the_model_died_on_and_goes_on(sample_settings, tmp_path):
    """A `fieldguide ask --batch` run whose model process is killed while answering its second item."""
    questions = tmp_path / "questions.jsonl"
    items = [{"id": f"q{i}", "question": q} for i, q in enumerate(
        ["Which fields are on the booking form?", "How is the price of a booking made up?",
         "How do I cancel a booking?"], start=1)]
    questions.write_text("".join(json.dumps(item) + "\n" for item in items))
    env = {**os.environ, "FIELDGUIDE_WEAVIATE_URL": sample_settings.weaviate_url,
           "FIELDGUIDE_WEAVIATE_GRPC_PORT": str(sample_settings.weaviate_grpc_port),
           "FIELDGUIDE_COLLECTION": sample_settings.collection, "FIELDGUIDE_DATA_DIR": str(sample_settings.data_dir),
           "FIELDGUIDE_VERIFY": "off", "FIELDGUIDE_MAX_ANSWER_TOKENS": "200"}
    process = subprocess.Popen([sys.executable, "-m", "fieldguide.cli", "ask", "--batch", str(questions)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines, stderr = [], []
    drain = threading.Thread(target=lambda: stderr.extend(process.stderr), daemon=True)
    drain.start()
    for raw in process.stdout:
        lines.append(json.loads(raw))
        if len(lines) == 1:  # between items: kill the model the moment it starts on the second one
            children = subprocess.run(["pgrep", "-f", "-P", str(process.pid), "llama_cpp.server"],
                                      capture_output=True, text=True).stdout.split()
            assert len(children) == 1, children
            _kill_when_busy(int(children[0]))
    assert process.wait(timeout=600) == 1  # some item failed: the exit status says so
    drain.join(timeout=10)
    by_id = {line["id"]: line for line in lines}
    assert list(by_id) == ["q1", "q2", "q3"]
    assert by_id["q1"]["answer"] and by_id["q3"]["answer"]
    assert "error" in by_id["q2"] and "stopped while answering" in by_id["q2"]["error"]
    assert any("q2" in line for line in stderr)


def _kill_when_busy(pid: int) -> None:
    """SIGKILL the model process once it works on a request (its CPU time starts to climb)."""
    import time

    def cpu_ticks() -> int:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    base = cpu_ticks()
    deadline = time.monotonic() + 120
    while cpu_ticks() - base < 5 and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
