"""fieldguide against the chain a LangChain user would write instead, on the same index, in one run.

The peer chain is the one LangChain's RAG tutorials build: langchain-weaviate's
`WeaviateVectorStore` over the same Weaviate collection with the same embedding model, as a
retriever with k=4 (it runs Weaviate's hybrid query, as that class always does), the four
chunks joined into a `ChatPromptTemplate`, then the same chat model with the same generation
options, streamed:

    {"context": retriever | join, "question": RunnablePassthrough()} | prompt | chat_model | StrOutputParser()

For every question, in one process, alternating which of the two goes first:

* retrieval - the peer retriever's `invoke` against fieldguide's retrieval graph (what
              `fieldguide retrieve --batch` runs): p50 and p95 milliseconds, and both scored
              with the same metrics as `shared/eval/score.py` (result lines are written, so that
              script can score them too);
* first token - for the first `--answers` answerable questions, from the question to the
              first streamed token: the peer chain's `astream` against fieldguide's whole graph
              (`fieldguide ask`'s path), in blocks fieldguide, peer, peer, fieldguide (each system's
              questions one after another, as it would run alone: llama.cpp keeps the prompt
              prefix it evaluated last). A question fieldguide abstains on streams no tokens; it
              is counted apart, with the time its answer took.

Targets: fieldguide's retrieval p50 <= 1.5 x the peer's; time to first token <= 1.1 x the peer's,
with fieldguide's retrieval quality ahead.

    python benchmarks/bench_peer.py --docs DIR --questions Q.jsonl [--answers N] [--answer-tokens N] [--out DIR]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

RETRIEVAL_TARGET = 1.5
FIRST_TOKEN_TARGET = 1.1
PEER_K = 4
# The system message of LangChain's RAG tutorial, as a user would copy it.
PEER_SYSTEM = ("You are an assistant for question-answering tasks. Use the following pieces of retrieved context "
               "to answer the question. If you don't know the answer, say that you don't know. Use three sentences "
               "maximum and keep the answer concise.\n\n{context}")


def build_peer(resources, answer_tokens: int, temperature: float):
    """(retriever, chain) over the store's collection, with fieldguide's own embeddings and chat model."""
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough
    from langchain_weaviate import WeaviateVectorStore

    from fieldguide.chat import bind_generation_options
    from fieldguide.store import CHUNK_FIELDS

    store = resources.store
    vector_store = WeaviateVectorStore(
        client=store.client, index_name=store.name, text_key="text", embedding=resources.embeddings,
        attributes=[name for name in CHUNK_FIELDS if name not in ("text", "embed_text")])
    retriever = vector_store.as_retriever(search_kwargs={"k": PEER_K})
    prompt = ChatPromptTemplate.from_messages([("system", PEER_SYSTEM), ("human", "{question}")])

    def join(documents) -> str:
        return "\n\n".join(document.page_content for document in documents)

    model = bind_generation_options(resources.chat_model, answer_tokens, temperature)
    chain = {"context": retriever | join, "question": RunnablePassthrough()} | prompt | model | StrOutputParser()
    return retriever, chain


def peer_result_line(question_id: str, documents, total_ms: float) -> dict:
    """The retrieval result line (docs/architecture.md) of the peer retriever's documents."""
    context = []
    for document in documents:
        meta = document.metadata
        context.append({"chunk_id": meta.get("chunk_id"), "source": meta.get("source"),
                        "heading_path": list(meta.get("heading_path") or []), "text": document.page_content,
                        "content_kind": meta.get("content_kind"), "images": list(meta.get("images") or [])})
    return {"id": question_id, "intent": None, "abstain": False, "context": context,
            "timings_ms": {"total": round(total_ms, 3)}}


def timed_ms(call):
    started = time.perf_counter()
    value = call()
    return value, (time.perf_counter() - started) * 1000.0


async def peer_first_token(chain, question: str) -> tuple[float | None, float]:
    started = time.perf_counter()
    first = None
    async for text in chain.astream(question):
        if text and first is None:
            first = (time.perf_counter() - started) * 1000.0
    return first, (time.perf_counter() - started) * 1000.0


async def fieldguide_first_token(graph, question: str, resources,
                                 overrides: dict | None = None) -> tuple[float | None, float, bool, float | None]:
    """(first text the reader sees, whole answer, abstained, first token of the chat model), in
    milliseconds. fieldguide writes its quoted evidence to the stream before the model has read
    its prompt, so the first text is a quote; the model's own first token (LangGraph's `messages`
    stream) is the figure to set beside the peer chain's, which has only the model to stream.
    `overrides`: per-request options."""
    from fieldguide.retrieval import run_config

    started = time.perf_counter()
    first = model_first = None
    abstained = False
    async for mode, payload in graph.astream({"question": question}, run_config(resources, overrides),
                                             stream_mode=["custom", "messages", "values"]):
        now = (time.perf_counter() - started) * 1000.0
        if mode == "custom" and isinstance(payload, dict) and payload.get("token") and first is None:
            first = now
        elif (mode == "messages" and model_first is None and getattr(payload[0], "content", None)
              and payload[1].get("langgraph_node") == "generate"):
            model_first = now
        elif mode == "values":
            abstained = bool(payload.get("abstain"))
    return first, (time.perf_counter() - started) * 1000.0, abstained, model_first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", required=True, type=Path, metavar="DIR")
    parser.add_argument("--questions", required=True, type=Path, metavar="Q.jsonl")
    parser.add_argument("--collection", metavar="NAME", help="default: the one `fieldguide eval` uses for DIR")
    parser.add_argument("--answers", type=int, default=12, metavar="N",
                        help="answerable questions timed to the first token (default 12)")
    parser.add_argument("--answer-tokens", type=int, default=16, metavar="N", help="longest answer (default 16)")
    parser.add_argument("--out", type=Path, default=Path("bench-peer"), metavar="DIR")
    args = parser.parse_args()

    from fieldguide.embedding import embedding_backend_id, load_embeddings
    from fieldguide.evaluation.bench import percentiles
    from fieldguide.evaluation.metrics import read_jsonl, score
    from fieldguide.evaluation.runner import auto_collection, ingest
    from fieldguide.retrieval import open_resources, result_line, retrieve
    from fieldguide.settings import get_settings
    from graph.graph import build_graph, build_retrieval_graph

    questions = read_jsonl(args.questions)
    settings = get_settings().model_copy(update={"collection": args.collection or auto_collection(args.docs),
                                                 "max_answer_tokens": args.answer_tokens})
    log = lambda message: print(message, file=sys.stderr)  # noqa: E731
    ingest(args.docs, settings, embeddings=load_embeddings(settings), log=log)  # incremental: cheap when done
    load_start = [round(x, 2) for x in os.getloadavg()]
    lines: dict[str, list[dict]] = {"fieldguide": [], "peer": []}
    latency: dict[str, list[float]] = {"fieldguide": [], "peer": []}
    node_ms: dict[str, list[float]] = {}
    # fieldguide: first text the reader sees (a quote); fieldguide_model: the chat model's first token
    first_token: dict[str, list[float]] = {"fieldguide": [], "fieldguide_model": [], "peer": []}
    abstained_ms: list[float] = []
    per_question: dict[str, dict[str, list[float]]] = {}  # id -> system -> first token of each block

    with open_resources(settings) as resources:
        retrieval_graph, full_graph = build_retrieval_graph(), build_graph()
        resources.warm_up(chat=True)
        retriever, chain = build_peer(resources, args.answer_tokens, settings.temperature)
        retriever.invoke("warm up")
        retrieve(retrieval_graph, "warm up", resources)

        def run_fieldguide(item) -> None:
            state, total_ms = retrieve(retrieval_graph, item["question"], resources)
            lines["fieldguide"].append(result_line(item["id"], state, total_ms))
            latency["fieldguide"].append(total_ms)
            timings = state.get("timings_ms") or {}
            for node, ms in timings.items():
                node_ms.setdefault(node, []).append(ms)
            # what LangGraph and the glue between the nodes cost (measured, not tuned for)
            node_ms.setdefault("outside_nodes", []).append(total_ms - sum(timings.values()))

        def run_peer(item) -> None:
            documents, total_ms = timed_ms(lambda: retriever.invoke(item["question"]))
            lines["peer"].append(peer_result_line(item["id"], documents, total_ms))
            latency["peer"].append(total_ms)

        log(f"retrieval: {len(questions)} questions, both systems, alternating")
        for number, item in enumerate(questions):
            for run in ((run_fieldguide, run_peer) if number % 2 == 0 else (run_peer, run_fieldguide)):
                run(item)

        answerable = [q for q in questions if q.get("answerable", True)][:args.answers]
        # Whole blocks per system, in the order A B B A: llama.cpp reuses the prompt prefix it
        # evaluated last (a system prompt, for one), which each system would find warm when it
        # runs alone; alternating question by question would throw both systems' away.
        blocks = ["fieldguide", "peer", "peer", "fieldguide"] if args.answers else []
        log(f"first token: {len(answerable)} answerable questions, blocks {' '.join(blocks)}")
        for name in blocks:
            for item in answerable:
                if name == "peer":
                    first, _ = asyncio.run(peer_first_token(chain, item["question"]))
                    if first is not None:
                        first_token["peer"].append(first)
                        per_question.setdefault(item["id"], {}).setdefault("peer", []).append(round(first, 1))
                else:
                    first, total, abstained, model_first = asyncio.run(fieldguide_first_token(
                        full_graph, item["question"], resources))
                    if model_first is not None:
                        first_token["fieldguide_model"].append(model_first)
                        per_question.setdefault(item["id"], {}).setdefault("fieldguide_model", []).append(
                            round(model_first, 1))
                    if first is not None:
                        first_token["fieldguide"].append(first)
                    elif abstained:
                        abstained_ms.append(total)

    args.out.mkdir(parents=True, exist_ok=True)
    for name, result_lines in lines.items():
        with (args.out / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in result_lines)
    scores = {name: score(questions, result_lines) for name, result_lines in lines.items()}
    retrieval = {name: percentiles(values) for name, values in latency.items()}
    tokens = {name: percentiles(values) for name, values in first_token.items()}
    figures = {
        "docs": f"{args.docs.resolve().parent.name}/{args.docs.name}", "questions": len(questions),
        "collection": settings.collection, "embedding_backend": embedding_backend_id(settings),
        "chat_model": type(resources.chat_model).__name__, "answer_tokens": args.answer_tokens, "peer_k": PEER_K,
        "cpus": os.cpu_count(), "load_average_at_start": load_start,
        # what decides how llama.cpp's threads behave when the cores are shared
        "chat_threads": getattr(resources.chat_model, "n_threads", None),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "retrieval_ms": retrieval,
        "retrieval_p50_ratio": round(retrieval["fieldguide"]["p50"] / retrieval["peer"]["p50"], 3),
        "retrieval_p50_target": RETRIEVAL_TARGET,
        "fieldguide_node_ms": {node: percentiles(values) for node, values in node_ms.items()},
        "first_token_ms": tokens,
        "first_token_p50_ratio": (round(tokens["fieldguide"]["p50"] / tokens["peer"]["p50"], 3)
                                  if tokens["fieldguide"]["n"] and tokens["peer"]["n"] else None),
        "model_first_token_p50_ratio": (round(tokens["fieldguide_model"]["p50"] / tokens["peer"]["p50"], 3)
                                        if tokens["fieldguide_model"]["n"] and tokens["peer"]["n"] else None),
        "first_token_target": FIRST_TOKEN_TARGET,
        "first_token_ms_per_question": per_question,
        "fieldguide_abstained": {"n": len(abstained_ms), "answer_ms": percentiles(abstained_ms)},
        "quality": {name: {key: scores[name].get(key) for key in (
            "facts_all", "facts_soft", "file_hit", "section_mrr", "abstain_ok", "ctx_words")} for name in scores},
    }
    (args.out / "bench_peer.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
