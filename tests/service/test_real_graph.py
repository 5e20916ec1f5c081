"""The service over the real query graph: sample docs ingested into a real Weaviate, real models."""
from __future__ import annotations

import httpx
import pytest

from fieldguide.service import create_app
from fieldguide_testing.serving import SAMPLE_DOCS, serve
from tests.service.sse import iter_sse

pytestmark = [pytest.mark.weaviate, pytest.mark.models]


@pytest.fixture
def real_server(weaviate_settings):
    from ingest.pipeline import ingest_folder

    settings = weaviate_settings.model_copy(update={"docs_dir": SAMPLE_DOCS, "max_answer_tokens": 48})
    ingest_folder(SAMPLE_DOCS, settings, progress=False)
    app = create_app(settings)  # the real graph and the real store probe
    with serve(app) as base:
        yield base


def test_real_pipeline_streams_a_grounded_answer_with_screenshots(real_server):
    with httpx.Client(timeout=300) as client:
        ready = client.get(real_server + "/readyz")
        assert ready.status_code == 200
        calibration = ready.json()["calibration"]  # the index's own thresholds, as ingest stored them
        assert calibration["probes"] == 30 and calibration["abstain_margin"] > 0 and calibration["chunks"] > 0
        started = client.post(real_server + "/conversations",
                              json={"question": "Which fields are on the booking form?"}).json()
        with client.stream("GET", real_server + started["stream_url"]) as response:
            events = list(iter_sse(response))
        assert events[-1].event == "done", events[-1]
        stages = [e.json["stage"] for e in events if e.event == "status"]
        assert stages[:3] == ["started", "condense", "route"] and "evidence" in stages and "generate" in stages
        (sources,) = [e.json["sources"] for e in events if e.event == "sources"]
        assert "screens/booking-form.md" in [s["source"] for s in sources]
        urls = [url for s in sources for url in s["image_urls"]]
        assert "/docs-assets/screens/images/booking-form.svg" in urls
        assert client.get(real_server + "/docs-assets/screens/images/booking-form.svg").status_code == 200
        done = events[-1].json
        tokens = "".join(e.json["text"] for e in events if e.event == "token")
        assert done["answer"] and tokens.strip() == done["answer"]
        assert done["abstain"] is False and done["intent"] in ("screen", "ambiguous")
        assert done["answer"].startswith("> ")  # the quoted evidence comes first
        numbers = {s["n"] for s in sources}
        assert done["citations"] and {c["n"] for c in done["citations"]} <= numbers
        assert all(c["url"].startswith("/docs-assets/") and "#L" in c["url"] for c in done["citations"])
        assert done["sentences"] and all("support" in s and "kept" in s for s in done["sentences"])

        follow_up = client.post(real_server + "/conversations", json={
            "question": "And which of them are required?", "conversation_id": started["conversation_id"]}).json()
        with client.stream("GET", real_server + follow_up["stream_url"]) as response:
            events = list(iter_sse(response))
        assert events[-1].event == "done"
        assert int(events[0].id) > int(follow_up["stream_url"].rsplit("=", 1)[1])
        standalone = events[-1].json["standalone_question"]
        assert standalone.startswith("And which of them are required? — about: ")  # the follow-up, made standalone
