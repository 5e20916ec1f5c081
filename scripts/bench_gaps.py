"""Benchmark of `fieldguide gaps`: classification of a seeded store, and time over 10,000 turns.

    python scripts/bench_gaps.py --docs CORPUS/docs [--collection NAME] [--seed FILE] [--turns 10000]
                                 [--without-vectors]

1. Ingests the docs into the collection (incremental: free when already there).
2. Seeds a fresh SQLite state file (the service's own turn store) as the service stores turns
   (each with the vector of its question, `question_vector`, made by the configured embedding
   model as the query graph makes it; here all in one batch, before anything is timed) with the 60 turns of
   the seed file (`--seed`; default tests/fixtures/gaps/seed_turns.jsonl, written for the
   actual-budget docs; tests/fixtures/gaps/seed_turns_plausible.jsonl is a held-out set written
   the same way for the Plausible Analytics docs): 20 answerable (answered, every sentence supported),
   20 on four topics the docs lack and 20 worded far from the section that answers them (both
   stored as abstained, the outcome the report is about). Runs `fieldguide gaps --format json`
   on it and prints the classification figures the targets name:
   * missing-topic turns in "missing" clusters (target >= 90 %);
   * far-worded turns in "not_found" clusters whose candidates name their gold section (>= 70 %);
   and, for the far-worded turns, where the broader search ranks each one's gold section when
   that wording is searched alone: a cluster names at most NEAREST_MAX sections, so the share
   of gold sections ranked that high is the most the classification can reach.
3. Seeds another store the same way with `--turns` turns (the seed questions under varied
   wordings, every one distinct, in the seed's proportions) and times the whole `fieldguide gaps`
   command on it (models loaded, index opened, everything), printing seconds and the load average.
   `--without-vectors` seeds both stores as turns stored before the service kept question
   vectors: `gaps` then embeds every wording itself (the fallback).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "tests" / "fixtures" / "gaps" / "seed_turns.jsonl"
PREFIXES = ["", "Hi! ", "Quick question: ", "Hello, ", "Sorry if this is obvious, but ", "Newbie here: ",
            "Can someone help? ", "Hey, ", "One more thing: ", "I wonder: ", "Help please: ", "Question: ",
            "Maybe a silly one: ", "Good morning! ", "Stuck again: ", "Asking for my family: "]
SUFFIXES = ["", " Thanks!", " I'm on the desktop app.", " Thanks in advance.", " I'm new to this.",
            " (web version)", " Any tips?", " Cheers.", " It's my first week.", " I use it on my phone.",
            " I searched but found nothing.", " Running the latest version.", " Sorry for my English."]


def read_seed(path: Path = SEED) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def question_vectors(questions: list[str]) -> dict[str, dict]:
    """What the service stores with each question's turn as `question_vector`: the vector the
    query graph searched with (the configured model, the query prompt) in the stored form,
    named by its vector space. Embedded here in batches, since the service made them one by one
    while answering, which the timing of `gaps` is not about."""
    from fieldguide.embedding import embed_questions, load_embeddings, question_vector_record, question_vector_space
    from fieldguide.settings import Settings

    settings = Settings()
    distinct = list(dict.fromkeys(questions))
    space = question_vector_space(settings)
    vectors = embed_questions(load_embeddings(settings), distinct)
    return {q: question_vector_record(space, v) for q, v in zip(distinct, vectors)}


def seed_store(path: Path, rows: list[dict], vectors: dict[str, dict] | None = None) -> None:
    """Write `rows` as finished turns (one conversation each) into the SQLite state at `path`,
    each with its question's vector from `vectors` (none when not given: turns stored before
    the service kept vectors)."""
    from fieldguide.service.state.sqlite import SqliteState

    store = SqliteState(path)
    try:
        for number, row in enumerate(rows):
            record = store.start(f"seed-{number:05d}", row["question"])
            if row["abstain"]:
                final = {"abstain": True, "answer": "The documentation does not say.", "intent": "conceptual",
                         "sentences": [], "citations": []}
            else:
                final = {"abstain": False, "answer": "An answer [1].", "intent": "conceptual",
                         "sentences": [{"text": "An answer [1].", "citations": [1], "support": 0.9, "kept": True}],
                         "citations": [{"n": 1, "source": "index.md", "heading_path": ["Actual Budget"]}]}
            if vectors is not None:
                final["question_vector"] = vectors[row["question"]]
            store.finish(record.finish("done", final))
    finally:
        store.close()


def run_gaps(state: Path, env: dict, fmt: str = "json") -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "fieldguide.cli", "gaps", "--format", fmt],
                            env={**env, "FIELDGUIDE_STATE_URL": f"sqlite:///{state}"}, capture_output=True, text=True)
    return result, time.perf_counter() - started


def same_section(candidate: dict, row: dict) -> bool:
    gold, path = row["gold_heading_path"], candidate["heading_path"]
    return candidate["source"] == row["gold_file"] and path[:len(gold)] == gold


def classification(report: dict, rows: list[dict]) -> dict:
    where = {}
    for cluster in report["clusters"]:
        for question in cluster["questions"]:
            where[question] = cluster
    missing = [r for r in rows if r["group"] == "missing"]
    far = [r for r in rows if r["group"] == "far"]
    answerable = [r for r in rows if r["group"] == "answerable"]
    in_missing = [r for r in missing if where.get(r["question"], {}).get("kind") == "missing"]
    in_not_found = [r for r in far if where.get(r["question"], {}).get("kind") == "not_found"]
    with_gold = [r for r in in_not_found if any(same_section(c, r) for c in where[r["question"]]["nearest"])]
    topics = {}
    for r in missing:
        topics.setdefault(r["topic"], set()).add(id(where.get(r["question"])))
    return {
        "missing_in_missing": f"{len(in_missing)}/{len(missing)} = {len(in_missing) / len(missing):.0%}",
        "far_in_not_found": f"{len(in_not_found)}/{len(far)}",
        "far_in_not_found_with_gold": f"{len(with_gold)}/{len(far)} = {len(with_gold) / len(far):.0%}",
        "answerable_in_report": sum(1 for r in answerable if r["question"] in where),
        "clusters": len(report["clusters"]),
        "clusters_per_missing_topic": {t: len(ids) for t, ids in topics.items()},
        "far_misses": [{"id": r["id"], "kind": where.get(r["question"], {}).get("kind"),
                        "nearest": [f"{c['source']}#{' > '.join(c['heading_path'])} {c['score']}"
                                    for c in where.get(r["question"], {}).get("nearest", [])],
                        "reason": where.get(r["question"], {}).get("reason")}
                       for r in far if r not in with_gold],
        "missing_misses": [{"id": r["id"], "kind": where.get(r["question"], {}).get("kind"),
                            "reason": where.get(r["question"], {}).get("reason")}
                           for r in missing if r not in in_missing],
    }


def candidate_ceiling(rows: list[dict], collection: str) -> dict:
    """Where the broader search ranks each far-worded turn's gold section when that wording is
    searched alone (`BroadSearch`, as `gaps` runs it): the share with the gold among the first
    NEAREST and NEAREST_MAX sections is the most the classification can reach, since a cluster
    names only sections its wordings rank that high."""
    from fieldguide.embedding import embed_questions
    from fieldguide.gaps import NEAREST, NEAREST_MAX, BroadSearch
    from fieldguide.retrieval import open_resources
    from fieldguide.settings import Settings

    far = [r for r in rows if r["group"] == "far"]
    with open_resources(Settings(collection=collection)) as resources:
        search = BroadSearch(resources)
        vectors = embed_questions(resources.embeddings, [r["question"] for r in far])
        ranks = []
        for row, vector in zip(far, vectors):
            _, each = search.search([row["question"]], [vector])
            ranked = each[0] if each else []
            ranks.append(next((n for n, c in enumerate(ranked, start=1) if same_section(c, row)), None))
    share = lambda top: sum(1 for r in ranks if r is not None and r <= top) / max(1, len(ranks))  # noqa: E731
    return {"far_gold_rank": {r["id"]: rank for r, rank in zip(far, ranks)},
            f"far_gold_in_top_{NEAREST}": f"{share(NEAREST):.0%}",
            f"far_gold_in_top_{NEAREST_MAX}": f"{share(NEAREST_MAX):.0%}",
            "far_gold_in_pool": f"{share(10**6):.0%}"}


def many(rows: list[dict], count: int) -> list[dict]:
    """`count` distinct wordings of the seed questions, cycling through the seed in order."""
    out = []
    variants = [(p, s) for s in SUFFIXES for p in PREFIXES]
    for n in range(count):
        row = rows[n % len(rows)]
        prefix, suffix = variants[(n // len(rows)) % len(variants)]
        question = row["question"]
        if prefix:
            question = question[0].lower() + question[1:]
        out.append({**row, "question": f"{prefix}{question}{suffix}"})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, required=True)
    parser.add_argument("--collection", default=os.environ.get("FIELDGUIDE_COLLECTION", "GapsDev"))
    parser.add_argument("--seed", type=Path, default=SEED, help="seeded turns, JSON Lines (default %(default)s)")
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--without-vectors", action="store_true",
                        help="seed turns without question vectors (records from before they were stored)")
    args = parser.parse_args()
    env = {**os.environ, "FIELDGUIDE_COLLECTION": args.collection}
    if not args.skip_ingest:
        done = subprocess.run([sys.executable, "-m", "fieldguide.cli", "ingest", str(args.docs), "--json"], env=env,
                              capture_output=True, text=True)
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return 1
    rows = read_seed(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        seeded = Path(tmp) / "seeded.sqlite"
        seed_store(seeded, rows, None if args.without_vectors else question_vectors([r["question"] for r in rows]))
        result, seconds = run_gaps(seeded, env)
        if result.returncode:
            print(result.stderr, file=sys.stderr)
            return 1
        report = json.loads(result.stdout)
        figures = classification(report, rows)
        print(f"## seeded store: {len(rows)} turns of {args.seed.name}")
        print(json.dumps({**figures, "levels": report["levels"], "seconds": round(seconds, 1),
                          "load_average": [round(x, 2) for x in os.getloadavg()]}, indent=2))
        print("\n## the broader search's ranking of each far-worded turn alone (the most naming can reach)")
        print(json.dumps(candidate_ceiling(rows, args.collection), indent=2))
        (ROOT / "build").mkdir(exist_ok=True)
        (ROOT / "build" / "gaps-seeded.json").write_text(result.stdout, encoding="utf-8")
        html, _ = run_gaps(seeded, env, "html")
        (ROOT / "build" / "gaps-seeded.html").write_text(html.stdout, encoding="utf-8")

        if args.turns:
            big = Path(tmp) / "many.sqlite"
            started = time.perf_counter()
            turns = many(rows, args.turns)
            vectors = None if args.without_vectors else question_vectors([r["question"] for r in turns])
            embedding = time.perf_counter() - started
            seed_store(big, turns, vectors)
            seeding = time.perf_counter() - started
            result, seconds = run_gaps(big, env)
            if result.returncode:
                print(result.stderr, file=sys.stderr)
                return 1
            report = json.loads(result.stdout)
            (ROOT / "build" / "gaps-many.json").write_text(result.stdout, encoding="utf-8")
            print(f"\n## {args.turns} stored turns")
            print(json.dumps({"gaps_seconds": round(seconds, 1), "phases": report["seconds"],
                              "problem_turns": report["problem_turns"], "clusters": len(report["clusters"]),
                              "embedded_wordings": report["embedded_wordings"],
                              "seeding_seconds": round(seeding, 1),
                              "seeding_embedding_seconds": round(embedding, 1), "cpus": os.cpu_count(),
                              "load_average": [round(x, 2) for x in os.getloadavg()]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
