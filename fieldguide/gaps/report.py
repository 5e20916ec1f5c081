"""The gap report: problem turns clustered, searched again and classified."""
from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass

from fieldguide.gaps.classify import KINDS, Cluster, classify, partly_covered
from fieldguide.gaps.clusters import cluster_questions, probe_threshold
from fieldguide.gaps.search import BroadSearch
from fieldguide.gaps.topics import TOPIC_WORDINGS, cluster_unknown_names, topic_words, unit_mean
from fieldguide.gaps.turns import TURN_KINDS, ProblemTurn, TurnSummary, turn_kind, wording_vectors

SEARCH_WORDINGS = 3  # wordings of a cluster searched again


@dataclass
class GapReport:
    clusters: list[Cluster]
    summary: TurnSummary
    seconds: dict[str, float]
    strong: float | None = None
    noise: float | None = None
    cluster_threshold: float | None = None
    embedded: int = 0  # wordings embedded here (the rest had a vector stored with their turn)

    def to_dict(self) -> dict:
        return {"clusters": [c.to_dict() for c in self.clusters],
                "turns": self.summary.turns, "problem_turns": len(self.summary.problems),
                "answered_without_sentence_checks": self.summary.unchecked,
                "levels": {"strong": self.strong, "noise": self.noise, "cluster": self.cluster_threshold},
                "seconds": self.seconds, "embedded_wordings": self.embedded}


def build_report(summary: TurnSummary, embed, search: BroadSearch | None,
                 threshold: float | None = None, model: str | None = None) -> GapReport:
    """Cluster and classify `summary`'s problem turns. `embed(texts) -> vectors`; `search` None
    when no cluster needs it (only disliked ones) or for a dry run (every search-needing cluster
    is then "missing" with no candidates)."""
    seconds = {}
    started = time.perf_counter()
    problems = summary.problems
    if threshold is None:
        threshold = probe_threshold(embed) if problems else 1.0
    # A wording is counted per kind of turn (`turn_kind`): the same question voted down once and
    # abstained on once is two tasks.
    keyed = Counter((turn_kind(t), t.question) for t in problems)
    keys = [k for k, _ in keyed.most_common()]
    wordings = [question for _, question in keys]
    counts = Counter({question: n for (_, question), n in keyed.items()})  # per wording, for the search
    vectors, embedded = wording_vectors(problems, wordings, embed, model) if wordings else ([], 0)
    seconds["embed"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    groups = []
    for kind in TURN_KINDS:  # each kind of turn clustered apart: see `turn_kind`
        rows = [i for i, key in enumerate(keys) if key[0] == kind]
        groups += [[rows[j] for j in group] for group in cluster_questions([vectors[i] for i in rows], threshold)]
    seconds["cluster"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    by_key: dict[tuple[str, str], list[ProblemTurn]] = {}
    for t in problems:
        by_key.setdefault((turn_kind(t), t.question), []).append(t)
    clusters = []
    strong = search.strong if search else math.inf
    noise = search.noise if search else math.inf
    frequency = search.document_frequency if search else None
    word_cache: dict[str, list[float]] = {}

    def word_vectors(words: list[str]) -> list[list[float]]:  # clusters share many words: each embedded once
        new = [w for w in words if w not in word_cache]
        if new:
            word_cache.update(zip(new, embed(new)))
        return [word_cache[w] for w in words]

    for group in groups:
        members = [wordings[i] for i in group]
        turns = [t for i in group for t in by_key[keys[i]]]
        members.sort(key=lambda w: -counts[w])
        disliked = sum(1 for t in turns if t.answered and "disliked" in t.reasons)
        partial = len(partly_covered(turns))
        sections: list[dict] = []
        each: list[list[dict]] = []
        topic = None
        if search is not None and disliked * 2 <= len(turns) and partial * 2 <= len(turns):
            ranked = sorted(group, key=lambda i: -counts[wordings[i]])
            picks = ranked[:SEARCH_WORDINGS]
            sections, each = search.search([wordings[i] for i in picks], [vectors[i] for i in picks])
            if frequency is not None:
                rows = ranked[:TOPIC_WORDINGS]
                topic = topic_words([wordings[i] for i in rows], unit_mean([vectors[i] for i in rows]),
                                    word_vectors, frequency, heading_frequency=search.heading_frequency)
        unknown = cluster_unknown_names(members, counts, frequency) if search is not None else []
        kind, reason, action, nearest = classify(turns, sections, strong, noise, topic,
                                                 search.margin if search else None, each, unknown)
        clusters.append(Cluster(kind, turns, members, nearest, reason, action, topic))
    clusters.sort(key=lambda c: (-c.count, KINDS.index(c.kind)))
    seconds["search"] = round(time.perf_counter() - started, 3)
    return GapReport(clusters, summary, seconds, None if search is None else strong,
                     None if search is None else noise, threshold, embedded)


def report_for(summary, settings, threshold: float | None, resources=None, label: str | None = None):
    """Cluster and classify `summary` against the index of `settings` (opened here unless given)."""
    if not summary.problems:
        return build_report(summary, lambda texts: [], None, threshold)
    own = resources is None
    if own:
        from fieldguide.retrieval import open_resources

        context = open_resources(settings, [label] if label else None)
        resources = context.__enter__()
    try:
        from fieldguide.embedding import embed_questions, question_vector_space

        embeddings = resources.embeddings
        search = BroadSearch(resources, labels=[label] if label else None)
        # questions are embedded as the query graph embeds them, so that a wording embedded here
        # and one whose vector the service stored (named by the same vector space) are comparable
        return build_report(summary, lambda texts: embed_questions(embeddings, texts), search, threshold,
                            question_vector_space(settings))
    finally:
        if own:
            context.__exit__(None, None, None)
