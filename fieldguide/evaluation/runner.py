"""`fieldguide eval`: the pipeline, its ablations and the naive baselines on one question set.

Every system answers every question; the same metrics (`fieldguide.evaluation.metrics`)
score them side by side. The pipeline runs exactly as `fieldguide retrieve --batch` runs
it: the real retrieval graph over the real store, one result line per question.

Ablations switch one stage off at a time, through per-request options the nodes honour
(`config["configurable"]`), except the token pass, which is an ingest-time stage and gets
a collection of its own, built with `Chunker(token_pass=False)`.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from fieldguide.evaluation.baselines import BASELINES, run_baseline
from fieldguide.evaluation.metrics import score_slices

PIPELINE = "fieldguide"
NO_TOKEN_PASS = "no_token_pass"
# Per-request options that switch one query-time stage off (see graph/options.py).
QUERY_ABLATIONS: dict[str, dict] = {
    "no_threshold": {"min_similarity": -1.0},          # cosine is never below -1: everything passes
    "no_rerank": {"reranker": False},                  # similarity order, similarity as the score
    # every reranked candidate goes on, no abstention (the budget still applies)
    "no_cap": {"rerank_min": -1e9, "abstain_margin": -1e9, "rank_window": 1e9, "max_chunks": 1000},
    "no_reassembly": {"reassembly": False},            # capped chunks alone, no sibling parts
    "no_routing": {"routing": False},                  # every question alike: no screen steering
}
ABLATIONS = (NO_TOKEN_PASS, *QUERY_ABLATIONS)


def auto_collection(docs_dir: Path) -> str:
    """A collection name of its own for a docs folder: readable, and unique per folder."""
    resolved = Path(docs_dir).resolve()
    readable = "".join(part.title() for part in re.split(r"[^A-Za-z0-9]+", resolved.parent.name + " " + resolved.name)
                       if part)[:40]
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:8]
    return f"Eval{readable}_{digest}"


def corpus_label(docs_dirs: list[Path]) -> list[str]:
    """A short, distinct name per docs folder: the folder's name, or its parent's when the
    folder is called docs (corpus/docs/), numbered when two are still the same."""
    names = []
    for docs in docs_dirs:
        resolved = Path(docs).resolve()
        names.append(resolved.parent.name if resolved.name == "docs" else resolved.name)
    return [name if names.count(name) == 1 else f"{name}-{n}" for n, name in enumerate(names, start=1)]


def subset_questions(questions: list[dict], n: int | None) -> list[dict]:
    """The first `n` questions taken in turn from each intent (file order within an intent)."""
    if not n or n >= len(questions):
        return list(questions)
    by_intent: dict[str, list[dict]] = {}
    for q in questions:
        by_intent.setdefault(str(q.get("intent")), []).append(q)
    queues, picked = list(by_intent.values()), []
    while len(picked) < n:
        for queue in queues:
            if queue and len(picked) < n:
                picked.append(queue.pop(0))
    order = {id(q): i for i, q in enumerate(questions)}
    return sorted(picked, key=lambda q: order[id(q)])


def ingest(docs_dir: Path, settings, *, embeddings, token_pass: bool = True, log=print) -> dict:
    """Bring `settings.collection` in line with the folder (incremental: cheap when unchanged)."""
    from fieldguide.store import open_store
    from ingest.pipeline import ingest_folder

    with open_store(settings) as store:
        summary = ingest_folder(docs_dir, settings, store=store, embeddings=embeddings, token_pass=token_pass,
                                progress=sys.stderr.isatty(), log=log)
    return summary.to_dict()


def retrieve_all(questions: list[dict], settings, variants: dict[str, dict]) -> dict[str, list[dict]]:
    """Result lines of every question for each named set of per-request options (one store, models loaded once)."""
    from fieldguide.retrieval import open_resources, result_line, retrieve
    from graph.graph import build_retrieval_graph

    lines: dict[str, list[dict]] = {}
    with open_resources(settings) as resources:
        retrieval_graph = build_retrieval_graph()
        resources.warm_up(chat=False)  # no question pays for loading a model
        retrieve(retrieval_graph, "warm up", resources)
        for name, overrides in variants.items():
            lines[name] = []
            for number, item in enumerate(questions, start=1):
                state, total_ms = retrieve(retrieval_graph, item["question"], resources, overrides)
                lines[name].append(result_line(item.get("id", f"q-{number:03d}"), state, total_ms))
    return lines


class ReusingEmbeddings:
    """Embeddings that hand back a known vector for a text embedded before, and embed only the rest.

    The no-token-pass collection shares most of its chunks (everything not over-long) with
    the main one, word for word; reusing their vectors keeps `--ablate` to a few minutes.
    """

    def __init__(self, embeddings, known: dict[str, list[float]]):
        self.embeddings, self.known = embeddings, known
        self.reused = self.embedded = 0

    def embed_query(self, text: str) -> list[float]:
        return self.embeddings.embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = sorted({t for t in texts if t not in self.known})
        if missing:
            self.known.update(zip(missing, self.embeddings.embed_documents(missing)))
        self.embedded += len(missing)
        self.reused += len(texts) - len(missing)
        return [self.known[t] for t in texts]


def stored_vectors(settings) -> dict[str, list[float]]:
    """embed_text -> vector of every chunk in the collection."""
    from fieldguide.store import open_store

    with open_store(settings) as store:
        return {obj.properties["embed_text"]: obj.vector["default"]
                for obj in store.chunks.iterator(include_vector=True, return_properties=["embed_text"])}


@dataclass
class EvalRun:
    questions: list[dict]
    results: dict[str, list[dict]] = field(default_factory=dict)  # system -> result lines
    scores: dict[str, dict[str, dict]] = field(default_factory=dict)  # system -> slice -> metrics
    facts: dict = field(default_factory=dict)  # collections, ingest summaries, seconds per phase
    answers: list[dict] = field(default_factory=list)  # answer lines (eval --answers)
    answer_scores: dict[str, dict] = field(default_factory=dict)  # question set -> answer metrics

    def score(self) -> None:
        self.scores = {name: score_slices(self.questions, lines) for name, lines in self.results.items()}


def answer_all(items: list[dict], settings, overrides: dict | None = None) -> list[dict]:
    """Answer lines of every question and conversation turn, as `fieldguide ask --batch` writes them."""
    import asyncio

    from langgraph.checkpoint.memory import MemorySaver

    from fieldguide.retrieval import answer_batch, open_resources
    from graph.graph import build_graph

    async def collect() -> list[dict]:
        with open_resources(settings) as resources:
            resources.warm_up()
            lines = [line async for line in answer_batch(build_graph(MemorySaver()), items, resources, overrides)]
        for line in lines:
            if "error" in line:
                print(f"fieldguide eval: {line['id']}: {line['error']}", file=sys.stderr)
        return [line for line in lines if "error" not in line]  # a missing line scores as a miss

    return asyncio.run(collect())


def score_answer_sets(questions: list[dict], conversations: list[dict], lines: list[dict]) -> dict[str, dict]:
    """Answer metrics of the single questions, of every conversation turn, and of follow-up turns alone."""
    from fieldguide.evaluation.answer_metrics import score_answers, turns_of

    tables = {"questions": score_answers(turns_of(questions), lines)}
    if conversations:
        turns = turns_of(conversations)
        tables["conversation turns"] = score_answers(turns, lines)
        tables["follow-up turns"] = score_answers([t for t in turns if t["turn"] > 1], lines)
    return tables


def evaluate(docs_dir: Path, questions: list[dict], settings, *, ablate: bool = False,
             baselines: bool = True, answers: bool = False, conversations: list[dict] | None = None,
             log=print) -> EvalRun:
    """Ingest when needed, run the pipeline (and its ablations) and the baselines, score them all;
    with `answers`, also answer every question (and conversation) and score the answers."""
    from fieldguide.embedding import embedding_backend_id, embedding_model_id, load_embeddings

    run = EvalRun(questions)
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[name] = round(now - clock, 2)
        clock = now

    embeddings = load_embeddings(settings)
    lap("load_model")
    log(f"ingest {docs_dir} -> {settings.collection}")
    run.facts["collection"] = settings.collection
    run.facts["ingest"] = ingest(docs_dir, settings, embeddings=embeddings, log=log)
    lap("ingest")

    variants = {PIPELINE: {}}
    if ablate:
        variants.update(QUERY_ABLATIONS)
    log(f"retrieve {len(questions)} questions x {len(variants)} configuration(s)")
    run.results.update(retrieve_all(questions, settings, variants))
    lap("retrieve")

    if ablate:
        plain = settings.model_copy(update={"collection": f"{settings.collection}NoTokenPass"})
        log(f"ingest without the token pass -> {plain.collection}")
        run.facts["collection_no_token_pass"] = plain.collection
        reusing = ReusingEmbeddings(embeddings, stored_vectors(settings))
        run.facts["ingest_no_token_pass"] = ingest(docs_dir, plain, embeddings=reusing, token_pass=False, log=log)
        run.facts["ingest_no_token_pass"].update(vectors_reused=reusing.reused, texts_newly_embedded=reusing.embedded)
        run.results[NO_TOKEN_PASS] = retrieve_all(questions, plain, {NO_TOKEN_PASS: {}})[NO_TOKEN_PASS]
        lap("ablate_token_pass")

    if baselines:
        run.facts["baselines"] = {}
        for mode in BASELINES:
            log(f"baseline {mode}: split, embed, top-4")
            run.results[mode], run.facts["baselines"][mode] = run_baseline(
                mode, docs_dir, questions, embeddings, Path(settings.data_dir) / "eval-cache",
                f"{embedding_model_id(settings)} {embedding_backend_id(settings)}")
            lap(f"baseline_{mode}")
    if answers or conversations:
        log(f"answer {len(questions)} questions and {len(conversations or [])} conversations")
        run.answers = answer_all(list(questions) + list(conversations or []), settings)
        run.answer_scores = score_answer_sets(questions, conversations or [], run.answers)
        lap("answers")
    run.facts["seconds"] = seconds
    run.facts["variants"] = {name: overrides for name, overrides in variants.items()}
    run.score()
    return run


def system_order(run: EvalRun) -> list[str]:
    """Columns: the baselines, the pipeline, then each ablation."""
    order = [name for name in BASELINES if name in run.results] + [PIPELINE]
    return order + [name for name in ABLATIONS if name in run.results]


def write_outputs(run: EvalRun, out_dir: Path, meta: dict) -> dict[str, Path]:
    """report.json, one result-line file per system and the chart, under `out_dir`."""
    from fieldguide.evaluation.report import save_chart

    out_dir.mkdir(parents=True, exist_ok=True)
    results_dir = out_dir / "results"
    results_dir.mkdir(exist_ok=True)
    for name, lines in run.results.items():
        with (results_dir / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    if run.answers:
        with (results_dir / "answers.jsonl").open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in run.answers)
    report = {**meta, **run.facts, "systems": system_order(run), "scores": run.scores}
    if run.answer_scores:
        report["answer_scores"] = run.answer_scores
    paths = {"report": out_dir / "report.json", "chart": out_dir / "eval.png", "results": results_dir}
    paths["report"].write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    save_chart(run.scores, system_order(run), paths["chart"])
    return paths
