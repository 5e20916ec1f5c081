"""Index versions and stale answers (`fieldguide gaps --stale`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from fieldguide.freshness import cited_sections, index_version, render_stale, stale_answers, text_digest


def test_index_version_follows_the_files_only():
    files = {"a.md": {"sha256": "1", "chunk_count": 3}, "b.md": {"sha256": "2", "chunk_count": 1}}
    same = {"b.md": {"sha256": "2", "chunk_count": 9}, "a.md": {"sha256": "1", "chunk_count": 3}}
    assert index_version(files) == index_version(same) and len(index_version(files)) == 16
    assert index_version(files) != index_version({**files, "a.md": {"sha256": "changed"}})
    assert index_version(files) != index_version({"a.md": files["a.md"]})
    assert index_version({}) == ""


def test_cited_sections_are_the_cited_blocks_or_else_the_context():
    context = [{"chunk_id": "x", "source": "a.md", "heading_path": ["A"], "text": "alpha"},
               {"chunk_id": "y", "source": "b.md", "heading_path": ["B"], "text": "beta"}]
    assert [s["chunk_id"] for s in cited_sections({"context": context, "citations": [{"n": 1, "chunk_id": "y"}]})] == ["y"]
    every = cited_sections({"context": context + context[:1]})
    assert [s["chunk_id"] for s in every] == ["x", "y"] and every[0]["digest"] == text_digest("alpha")


def _answer(cid, version, sections, **values):
    return {"conversation_id": cid, "turn": 1, "question": f"q {cid}", "status": "done", "abstain": False,
            "answer": "a", "index_version": version, "sections": sections, "started_at": 5.0, **values}


def test_changed_and_disappeared_sections_make_an_answer_stale():
    kept = {"chunk_id": "k", "source": "a.md", "heading_path": ["A"], "digest": text_digest("same")}
    edited = {"chunk_id": "e", "source": "a.md", "heading_path": ["E"], "digest": text_digest("old text")}
    gone = {"chunk_id": "g", "source": "c.md", "heading_path": ["G"], "digest": text_digest("x")}
    turns = [_answer("fresh", "v1", [kept]), _answer("edited", "v1", [kept, edited]), _answer("gone", "v1", [gone]),
             _answer("current", "v2", [gone]), _answer("abstained", "v1", [gone], abstain=True),
             _answer("old", "v1", [gone], started_at=1.0), _answer("unversioned", None, [gone])]
    asked = []

    def lookup(ids):
        asked.append(ids)
        return {"k": "same", "e": "new text"}

    stale = stale_answers(turns, "v2", lookup, since=2.0)
    assert [s["turn"] for s in stale] == ["edited#1", "gone#1"]
    assert stale[0]["sections"] == [{"source": "a.md", "heading_path": ["E"], "change": "changed"}]
    assert stale[1]["sections"] == [{"source": "c.md", "heading_path": ["G"], "change": "disappeared"}]
    assert asked == [["e", "g", "k"]]  # one read of the index for every answer checked
    assert json.loads(render_stale(stale, "json", "v2"))["stale"][0]["turn"] == "edited#1"
    assert "a.md#E (changed)" in render_stale(stale, "md", "v2") and "<table>" in render_stale(stale, "html", "v2")
    assert stale_answers([], "v2", lookup) == []


def _gaps(*args, env):
    return subprocess.run([sys.executable, "-m", "fieldguide.cli", "gaps", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)


def test_gaps_cli_bad_input_and_empty_store(tmp_path):
    env = {"FIELDGUIDE_STATE_URL": f"sqlite:///{tmp_path}/none.sqlite", "FIELDGUIDE_WEAVIATE_URL": "http://127.0.0.1:1"}
    bad = _gaps("--since", "last tuesday", env=env)
    assert bad.returncode == 2 and "--since 'last tuesday'" in bad.stderr and "Traceback" not in bad.stderr
    assert _gaps("--format", "pdf", env=env).returncode == 2
    assert _gaps("--cluster-threshold", "1.5", env=env).returncode == 2
    empty = _gaps("--format", "json", env=env)
    assert empty.returncode == 0, empty.stderr
    assert json.loads(empty.stdout)["clusters"] == [] and json.loads(empty.stdout)["turns"] == 0
    assert not (tmp_path / "none.sqlite").exists()  # reading gaps creates no state file
    wrong = _gaps(env={**env, "FIELDGUIDE_STATE_URL": "ftp://somewhere"})
    assert wrong.returncode == 1 and "FIELDGUIDE_STATE_URL" in wrong.stderr and "Traceback" not in wrong.stderr
