"""Gap reports: stored turns turned into a short task list for the people who write the docs.

A turn is a *problem turn* when the assistant abstained on it, when its coverage verdict was
`partial`, when its answer kept a sentence only with a warning (weak support: the `sentences` of
the answer line; a sentence the check left out never reached the reader and is no problem), or
when a reader voted it down. Turns stored before answers carried sentence checks simply have
no `sentences`; they count as problems only when they abstained or were voted down, and the
report says how many answered turns could not be checked.

Problem turns are clustered by the meaning of their question (the standalone question when
the turn has one), each kind of turn apart (`turn_kind`: voted down, partial, unanswered): the
index's own embedding model, normalised vectors, a greedy pass that
joins a question to the cluster whose members it is on average closest to when that mean
cosine reaches `cluster_threshold`, and otherwise opens a new one (largest wordings first, so
a common wording seeds its cluster); clusters whose members are that close on average merge.

Each cluster is then searched again, more broadly than the answer graph does: dense search
and Weaviate's hybrid (BM25 + vector) search, `BROAD_K` candidates each, for a few of its
wordings, every candidate scored by the pipeline's own scorer. What decides the kind is
measured on the index itself, by its calibration (`fieldguide.calibration`): off-topic probe
questions' best score is `rerank_min`, the noise level; a section that stands `abstain_margin`
above that noise is a *strong candidate*.

* **disliked**: most of the cluster's turns were answered and voted down;
* **partial**: most of them were answered with the `partial` coverage verdict: the reader was told
  the quotes are only the closest the docs come (`nodes/coverage.py`); the sections they cited are
  named;
* **missing**: at least half the cluster's questions name something no chunk of the index
  holds (Bitcoin, Alexa: `fieldguide.names`), or the words they turn on are words the docs do
  not use (`topic_words`), or nothing stands out of the noise even with the broader search;
* **not_found**: otherwise, when a candidate stands out: above the noise when the docs use
  the topic words, above the strong level when the index has no term statistics to tell (an
  index built before them). The docs cover it, retrieval (or the section's wording) missed it;
  the candidates are named as `file#heading`, for each wording searched its own three or, when
  they score within the index's abstain margin of its best, up to five; ranked by score and by
  their page's support (a page several of whose sections match ranks its sections higher).

Why topic words: the calibration's probes are off-topic questions, so they only measure
off-topic noise. A question in the product's domain about something its docs lack (payroll in a
budgeting app) shares domain words with many sections ("pay", "budget") and reads well above
that noise, as high as a question about a covered topic worded far from its section. What
tells the two apart is which words carry the question: a reader who words a covered topic
differently still names things the docs talk about, with unusual words on the side ("blew past
my food limit"), while a missing topic's own name is a word the docs never use. The words that
carry a cluster are found as KeyBERT does: the words whose own embedding is closest to the
cluster's centroid; whether the docs use them is read from the index's term statistics and
its headings: a word in at most two chunks, or in a few (at most five) that no heading holds,
is one the docs mention in passing but have no section about.
"""
from __future__ import annotations

import csv
import html
import io
import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Sequence

from fieldguide.headings import breadcrumb, heading_labels

KINDS = ("missing", "not_found", "disliked", "partial")
# A cluster is missing when at least this share of its turns name something no chunk holds.
NAMED_SHARE = 0.5
# The clustering threshold is measured for the embedding model in use (`probe_threshold`):
# the highest cosine between any two of the calibration's off-topic probes, questions on
# unrelated subjects. A question closer than that to a cluster's centroid is taken to ask
# the same thing; anything less could be chance.
BROAD_K = 30  # candidates per search kind (the graph's search takes ~12)
SEARCH_WORDINGS = 3  # wordings of a cluster searched again
NEAREST = 3  # sections named per cluster, at least (when found)
# ... and up to this many when they score within the index's abstain margin of the best: a
# section that does not stand out from the best by the index's own unit of standing out is as
# likely to be the one the readers needed (far-worded questions often rank it 4th or 5th).
NEAREST_MAX = 5
# Topic words (`topic_words`): the cluster's words closest in meaning to what it asks, read from
# this many of its most-asked wordings.
TOPIC_WORDINGS = 10
TOPIC_WORDS = 3
# A word found in at most this many chunks of the index is at most a passing mention there: a
# section about a topic names it in its heading, which every chunk under that heading carries
# (`fieldguide.bm25.document_words`), or repeats it in its text.
PASSING_MENTION_CHUNKS = 2
# ... and so is a word in a few more chunks (at most this many) that no heading of the index
# holds: the docs mention it here and there, but no section is about it (a section about a topic
# is named after it, and every chunk under that heading carries the name).
FEW_CHUNKS = 5
# A cluster is "missing" when at least this share of its topic words' weight is on words the
# docs do not use: most of what the readers ask about is something the docs never name.
UNKNOWN_TOPIC_SHARE = 0.5


# --- reading stored turns -----------------------------------------------------------------

def parse_since(text: str | None) -> float:
    """`--since`: an ISO date or date-time (UTC unless it says otherwise) as epoch seconds."""
    if not text:
        return 0.0
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--since {text!r}: expected a date like 2026-01-31 or 2026-01-31T09:00") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _get(record: Any, name: str, default=None):
    if isinstance(record, dict):
        return record.get(name, default)
    return getattr(record, name, default)


@dataclass
class ProblemTurn:
    conversation_id: str
    turn: int
    question: str  # the standalone question when there is one, else as asked
    asked: str
    reasons: list[str]  # abstained | partial | weak | disliked
    answered: bool
    citations: list[dict] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    at: float = 0.0
    # the question's vector as stored with the turn: {"model": id, "vector": [...]}, or None
    stored_vector: dict | None = None


@dataclass
class TurnSummary:
    turns: int = 0  # finished turns read
    checked: int = 0  # answered turns whose sentences were checked
    unchecked: int = 0  # answered turns stored without sentence checks
    problems: list[ProblemTurn] = field(default_factory=list)


def sentence_reasons(sentences: Sequence[dict] | None) -> list[str]:
    """"weak" when a sentence reached the reader only with a warning (verify=flag). A sentence the
    check left out is no problem of the docs: the reader never saw it, and the small local model
    has one left out in nearly every answer, so counting it put answers the quotes had answered
    well ("Which field holds the number of life jackets?", with the right table row) in the
    report as topics to write."""
    reasons = []
    if any(isinstance(s, dict) and s.get("kept") is not False and s.get("flagged") for s in sentences or ()):
        reasons.append("weak")
    return reasons


def problem_turns(turns: Iterable[Any], feedback: Iterable[Any] = (), since: float = 0.0) -> TurnSummary:
    """The problem turns among stored turn records (TurnRecord or dicts) and feedback records;
    the newest vote on a turn is the one that counts."""
    votes: dict[tuple[str, int], tuple[float, str, str]] = {}
    rated: dict[tuple[str, int], Any] = {}
    for item in feedback:
        key = (_get(item, "conversation_id"), int(_get(item, "turn")))
        at = float(_get(item, "at", 0.0) or 0.0)
        if key not in votes or at >= votes[key][0]:
            votes[key] = (at, _get(item, "rating"), _get(item, "comment") or "")
            rated[key] = _get(item, "record")
    summary = TurnSummary()
    seen = set()
    for record in turns:
        status = _get(record, "status", "done")
        if status not in ("done", None):
            continue
        started = float(_get(record, "started_at", 0.0) or 0.0)
        if started < since:
            continue
        key = (_get(record, "conversation_id"), int(_get(record, "turn")))
        seen.add(key)
        summary.turns += 1
        _add(summary, record, key, votes.get(key))
    for key, record in rated.items():  # a rated turn whose own record has expired: its copy
        if key not in seen and record is not None and float(_get(record, "started_at", 0.0) or 0.0) >= since:
            summary.turns += 1
            _add(summary, record, key, votes.get(key))
    return summary


def _add(summary: TurnSummary, record: Any, key: tuple[str, int], vote) -> None:
    abstained = bool(_get(record, "abstain"))
    sentences = _get(record, "sentences") or []
    reasons = ["abstained"] if abstained else []
    if not abstained and _get(record, "coverage") == "partial":
        reasons.append("partial")
    if not abstained:
        if sentences:
            summary.checked += 1
            reasons += sentence_reasons(sentences)
        else:
            summary.unchecked += 1
    comments = []
    if vote is not None and vote[1] == "down":
        reasons.append("disliked")
        if vote[2].strip():
            comments.append(vote[2].strip())
    if not reasons:
        return
    asked = str(_get(record, "question") or "").strip()
    question = str(_get(record, "standalone_question") or "").strip() or asked
    if not question:
        return
    summary.problems.append(ProblemTurn(key[0], key[1], question, asked, reasons, not abstained,
                                        list(_get(record, "citations") or []), comments,
                                        float(_get(record, "started_at", 0.0) or 0.0),
                                        _stored_vector(_get(record, "question_vector"))))


def _stored_vector(value) -> dict | None:
    """A turn's stored question vector when well formed ({"model": str, "vector": numbers}), else
    None: an old record without one, or a damaged one, is embedded again."""
    if not isinstance(value, dict) or not isinstance(value.get("model"), str):
        return None
    vector = value.get("vector")
    if not isinstance(vector, list) or not vector or not all(isinstance(x, (int, float)) for x in vector):
        return None
    return {"model": value["model"], "vector": [float(x) for x in vector]}


def wording_vectors(problems, wordings: list[str], embed, model: str | None) -> tuple[list, int]:
    """One vector per wording: the one stored with a turn of that wording when it was made by
    `model`, else embedded here (all such wordings in one call). Returns (vectors, embedded count)."""
    known: dict[str, list[float]] = {}
    if model is not None:
        for t in problems:
            if t.stored_vector and t.stored_vector["model"] == model and t.question not in known:
                known[t.question] = t.stored_vector["vector"]
    missing = list(dict.fromkeys(w for w in wordings if w not in known))
    if missing:
        known.update(zip(missing, embed(missing)))
    return [known[w] for w in wordings], len(missing)


# --- clustering ---------------------------------------------------------------------------

def probe_threshold(embed) -> float:
    """The highest cosine between two off-topic probes (`fieldguide.calibration.OFF_TOPIC_PROBES`)
    as embedded by `embed(texts) -> vectors`: the closeness unrelated questions reach by chance."""
    import numpy as np

    from fieldguide.calibration import OFF_TOPIC_PROBES

    matrix = np.asarray(embed(list(OFF_TOPIC_PROBES)), dtype=np.float64)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    sims = matrix @ matrix.T
    np.fill_diagonal(sims, -1.0)
    return round(float(sims.max()), 4)


CLUSTER_BLOCK = 512  # wordings compared with the clusters in one matrix product


def cluster_questions(vectors, threshold: float, block: int = CLUSTER_BLOCK) -> list[list[int]]:
    """Greedy clustering of row vectors (normalised here) by average linkage: each row, in the
    order given, joins the cluster whose members it is closest to on average (mean cosine) when
    that reaches `threshold`, else starts its own; `_merge_close` then joins clusters the order
    split.

    Average linkage rather than closeness to a normalised centroid: the normalised centroid of
    a cluster of loosely related wordings moves towards what they share (the product's domain),
    so it grows closer to every question of the domain as the cluster grows and clusters chain
    unrelated needs together. The mean cosine to the members does not grow with size; it is the
    dot product with the members' mean vector, so it costs the same.

    Rows are taken `block` at a time: one matrix product compares a block with every cluster
    opened before it, and the rows that join one are added at once (the means they meet are
    those of the block's start). Only the rest, the rows that open new clusters, are compared
    one by one, and only with the clusters opened within their block. So the work in Python is
    one small step per row, the comparisons are matrix products, and nothing holds a rows x rows
    or clusters x clusters matrix in memory."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.size == 0:
        return []
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms == 0, 1.0, norms)
    sums = np.zeros((max(64, block), matrix.shape[1]), dtype=np.float32)
    means = np.zeros_like(sums)
    members: list[list[int]] = []
    for start in range(0, len(matrix), block):
        rows = matrix[start:start + block]
        before = len(members)
        joined = np.zeros(len(rows), dtype=bool)
        best = np.zeros(len(rows), dtype=np.int64)
        if before:
            sims = rows @ means[:before].T
            best = np.argmax(sims, axis=1)
            joined = sims[np.arange(len(rows)), best] >= threshold
            np.add.at(sums, best[joined], rows[joined])
            for offset in np.flatnonzero(joined):
                members[best[offset]].append(start + int(offset))
        for offset in np.flatnonzero(~joined):
            vector = rows[offset]
            count = len(members)
            if count > before:  # clusters opened within this block
                local = means[before:count] @ vector
                nearest = int(np.argmax(local))
                if local[nearest] >= threshold:
                    target = before + nearest
                    members[target].append(start + int(offset))
                    sums[target] += vector
                    means[target] = sums[target] / len(members[target])
                    continue
            if count == len(sums):
                sums = np.vstack([sums, np.zeros_like(sums)])
                means = np.vstack([means, np.zeros_like(means)])
            sums[count] = vector
            means[count] = vector
            members.append([start + int(offset)])
        touched = np.unique(best[joined]) if before else np.zeros(0, dtype=np.int64)
        if len(touched):
            sizes = np.array([len(members[i]) for i in touched], dtype=np.float32)[:, None]
            means[touched] = sums[touched] / sizes
    return _merge_close(members, sums[:len(members)], threshold, block)


def _close_pairs(means, threshold: float, block: int):
    """(a, b, mean cosine) of every pair of clusters a < b whose members' mean vectors' dot product
    (their average cosine) reaches `threshold`, a block of rows at a time (never the whole
    clusters x clusters matrix)."""
    import numpy as np

    found = []
    for start in range(0, len(means), block):
        sims = means[start:start + block] @ means.T
        rows, cols = np.nonzero(sims >= threshold)
        rows = rows + start
        keep = cols > rows
        found.append(np.stack([rows[keep], cols[keep], sims[rows[keep] - start, cols[keep]]], axis=1))
    return np.concatenate(found) if found else np.zeros((0, 3))


def _merge_close(members: list[list[int]], sums, threshold: float, block: int = CLUSTER_BLOCK) -> list[list[int]]:
    """Merge clusters whose members are on average at least `threshold` close in cosine (the
    greedy pass depends on order: two halves of one need can each open a cluster), closest
    pairs first; each round merges disjoint pairs, until no pair is left."""
    import numpy as np

    while len(members) > 1:
        sizes = np.array([len(m) for m in members], dtype=np.float32)[:, None]
        pairs = _close_pairs(sums / sizes, threshold, block)
        if not len(pairs):
            break
        used, merged = set(), []
        for a, b, _ in pairs[np.argsort(-pairs[:, 2], kind="stable")]:
            a, b = int(a), int(b)
            if a in used or b in used:
                continue
            used.update((a, b))
            merged.append((a, b))
        keep = [i for i in range(len(members)) if i not in used]
        members = [members[i] for i in keep] + [members[a] + members[b] for a, b in merged]
        sums = np.vstack([sums[keep]] + [(sums[a] + sums[b])[None, :] for a, b in merged])
    return [sorted(m) for m in members]


# --- classification -----------------------------------------------------------------------

@dataclass
class Cluster:
    kind: str
    turns: list[ProblemTurn]
    wordings: list[str]  # distinct wordings, most asked first
    nearest: list[dict]  # {"source", "heading_path", "score"}
    reason: str
    action: str
    topic: "TopicWords | None" = None

    @property
    def count(self) -> int:
        return len(self.turns)

    def to_dict(self) -> dict:
        reasons = Counter(r for t in self.turns for r in t.reasons)
        return {"kind": self.kind, "count": self.count, "questions": self.wordings, "nearest": self.nearest,
                "action": self.action, "reason": self.reason, "turn_reasons": dict(reasons),
                "comments": [c for t in self.turns for c in t.comments],
                "turns": [f"{t.conversation_id}#{t.turn}" for t in self.turns],
                "topic_words": [{"word": w, "closeness": c, "chunks": n} for w, c, n in self.topic.words]
                if self.topic else []}


def section_name(source: str, heading_path: Sequence[str]) -> str:
    return f"{source}#{breadcrumb(heading_path)}" if heading_path else source


class BroadSearch:
    """The broader search a cluster gets: dense + hybrid candidates scored by the pipeline's
    scorer, best score per section."""

    def __init__(self, resources, k: int = BROAD_K, labels=None):
        """`labels`: search those doc sets alone, judged by their calibration (one label's own)."""
        self.resources = resources
        self.k = k
        self.labels = tuple(labels) if labels else None
        calibration_for = getattr(resources, "calibration_for", None)
        self.calibration = calibration_for(self.labels) if calibration_for else resources.calibration
        self.term_stats = resources.term_stats
        self._headings: dict[str, int] | None = None

    @property
    def noise(self) -> float:
        return float(self.calibration.rerank_min)

    @property
    def strong(self) -> float:
        return float(self.calibration.rerank_min) + float(self.calibration.abstain_margin)

    @property
    def margin(self) -> float:
        return float(self.calibration.abstain_margin)

    @property
    def document_frequency(self) -> dict[str, int] | None:
        """Chunks of the index holding each word; None for an index built without term statistics."""
        return self.term_stats.document_frequency if self.term_stats is not None else None

    @property
    def heading_frequency(self) -> dict[str, int]:
        """Chunks of the index whose heading path holds each word (read once, headings only)."""
        if self._headings is None:
            from fieldguide.words import words

            counts: Counter = Counter()
            for heading_path, _ in self.resources.store.iter_documents():
                counts.update(set(words(" ".join(heading_labels(heading_path)))))
            self._headings = dict(counts)
        return self._headings

    def candidates(self, question: str, vector: Sequence[float]) -> list[dict]:
        """The broader pool of one wording: `k` dense and `k` hybrid candidates, each chunk once."""
        store = self.resources.store
        if self.labels:
            store = store.limited_to(self.labels)
        pool = {c["chunk_id"]: c for c in store.near_vector(vector, self.k)}
        for c in store.hybrid(question, vector, self.k):
            pool.setdefault(c["chunk_id"], c)
        return list(pool.values())

    def search(self, questions: Sequence[str],
               vectors: Sequence[Sequence[float]]) -> tuple[list[dict], list[list[dict]]]:
        """(sections with the best score any of `questions` gave them, best first by that score
        and their page's support (`page_supported`); each question's own sections, ranked the
        same way by the scores that question gave them)."""
        scorer = self.resources.reranker
        best: dict[tuple[str, tuple[str, ...]], float] = {}
        each = []
        for question, vector in zip(questions, vectors):
            pool = self.candidates(question, vector)
            if not pool:
                continue
            own: dict[tuple[str, tuple[str, ...]], float] = {}
            for candidate, score in zip(pool, scorer.score(question, pool, term_stats=self.term_stats)):
                key = (candidate["source"], tuple(candidate.get("heading_path") or ()))
                own[key] = max(float(score), own.get(key, -math.inf))
            for key, score in own.items():
                best[key] = max(score, best.get(key, -math.inf))
            each.append(ranked_sections(own))
        return ranked_sections(best), each


def ranked_sections(scores: dict[tuple[str, tuple[str, ...]], float]) -> list[dict]:
    """Section records of `scores` ((source, heading path) -> score), in `page_supported` order."""
    return [{"source": s, "heading_path": list(h), "score": round(scores[(s, h)], 4)}
            for s, h in page_supported(scores)]


# A section's rank also weighs its page: this share of the best score another section of the
# same page reached. A page several of whose sections match is about what was asked; a section
# that matches alone, among sections of unrelated pages, is more often a passing likeness.
PAGE_SUPPORT = 0.1


def page_supported(scores: dict[tuple[str, tuple[str, ...]], float], support: float = PAGE_SUPPORT) -> list:
    """Sections, (source, heading path) keys of `scores`, ordered by their score plus `support`
    times the best score of another section of the same page (none: nothing added)."""
    pages: dict[str, list[float]] = {}
    for (source, _), score in scores.items():
        pages.setdefault(source, []).append(score)
    top = {source: sorted(values, reverse=True)[:2] for source, values in pages.items()}

    def supported(key) -> float:
        first = top[key[0]]
        if scores[key] >= first[0]:  # the page's best section: its support is the page's second best
            other = first[1] if len(first) > 1 else 0.0
        else:
            other = first[0]
        return scores[key] + support * max(other, 0.0)

    return sorted(scores, key=lambda key: -supported(key))


def unit_mean(vectors) -> list[float]:
    """The mean direction of `vectors` (each normalised first, so none weighs more for its length)."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float64)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return matrix.mean(axis=0).tolist()


@dataclass
class TopicWords:
    """The words a cluster turns on, and how much of their weight the docs do not use."""

    words: list[tuple[str, float, int]]  # (word, closeness to the cluster's centroid, chunks that hold it)
    unknown_share: float  # share of the closeness on words the docs only mention (`passing_mention`)
    # the words the docs only mention; None: those in at most PASSING_MENTION_CHUNKS chunks
    unknown_words: list[str] | None = None

    @property
    def unknown(self) -> list[str]:
        if self.unknown_words is not None:
            return list(self.unknown_words)
        return [w for w, _, chunks in self.words if passing_mention(chunks, None)]


def passing_mention(chunks: int, headings: int | None) -> bool:
    """Whether a word held by `chunks` chunks of the index, `headings` of them under a heading
    that names it (None: not known), is at most mentioned in passing there: in at most
    PASSING_MENTION_CHUNKS chunks, or in at most FEW_CHUNKS and in no heading."""
    return chunks <= PASSING_MENTION_CHUNKS or (headings == 0 and chunks <= FEW_CHUNKS)


def topic_words(wordings: Sequence[str], centroid, word_vectors, document_frequency: dict[str, int],
                count: int | None = None, heading_frequency: dict[str, int] | None = None) -> TopicWords | None:
    """The `count` words of `wordings` closest in cosine to `centroid` (the cluster's mean question
    vector), as KeyBERT picks key words: a question's topic is what its vector is mostly made
    of, function words and asides are far from it. `word_vectors(words) -> vectors` embeds
    single words; `document_frequency` is the index's (chunks holding each word). Each topic
    word weighs its closeness (negative closeness counts as none); `unknown_share` is the share
    of that weight on words the docs only mention in passing (`passing_mention`; the heading
    test only when `heading_frequency`, chunks whose heading path holds each word, is given).
    Numbers are left out: they name amounts, not topics. None when there is no word to weigh."""
    import numpy as np

    from fieldguide.words import words as split_words

    candidates = list(dict.fromkeys(w for text in wordings for w in split_words(text) if not w.isdigit()))
    if not candidates:
        return None
    matrix = np.asarray(word_vectors(candidates), dtype=np.float64)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    centre = np.asarray(centroid, dtype=np.float64)
    centre /= max(float(np.linalg.norm(centre)), 1e-12)
    closeness = matrix @ centre
    order = np.argsort(-closeness, kind="stable")[:count or TOPIC_WORDS]
    chosen = [(candidates[i], round(float(closeness[i]), 4), int(document_frequency.get(candidates[i], 0)))
              for i in order]
    mentioned = [w for w, _, n in chosen
                 if passing_mention(n, None if heading_frequency is None else heading_frequency.get(w, 0))]
    total = sum(max(c, 0.0) for _, c, _ in chosen)
    unknown = sum(max(c, 0.0) for w, c, _ in chosen if w in mentioned)
    return TopicWords(chosen, unknown / total if total > 0 else 0.0, mentioned)


def named_sections(sections: list[dict], margin: float | None) -> list[dict]:
    """The sections a cluster names: the best NEAREST, and further ones up to NEAREST_MAX while
    they score within `margin` (the index's abstain margin) of the best."""
    if not sections:
        return []
    named = sections[:NEAREST]
    scores = [s["score"] for s in sections if s["score"] is not None]
    if margin is not None and scores:
        close = max(scores) - margin
        named += [s for s in sections[NEAREST:NEAREST_MAX] if s["score"] is not None and s["score"] >= close]
    return named


def named_per_wording(each: Sequence[list[dict]], margin: float | None) -> list[dict]:
    """The sections a cluster names when its searched wordings are ranked one by one: each
    wording's own `named_sections`, taken rank by rank across the wordings (every wording's
    best, then every wording's second, ...), each section once, with the best score any
    wording gave it.

    Why per wording: a cluster can hold wordings of different needs that read alike (two
    far-worded questions that share only the product's domain), and one ranking pooled over
    them names the sections of whichever wording scores highest, so the other wordings' own
    best sections fall below the few that are named. A cluster of one need loses nothing: its
    wordings' rankings agree, and a section named by several is named once."""
    lists = [named_sections(list(ranked), margin) for ranked in each]
    best: dict[tuple[str, tuple[str, ...]], float] = {}
    for ranked in each:
        for s in ranked:
            if s["score"] is not None:
                key = (s["source"], tuple(s["heading_path"]))
                best[key] = max(s["score"], best.get(key, -math.inf))
    named, seen = [], set()
    for rank in range(max((len(x) for x in lists), default=0)):
        for ranked in lists:
            if rank < len(ranked):
                key = (ranked[rank]["source"], tuple(ranked[rank]["heading_path"]))
                if key not in seen:
                    seen.add(key)
                    named.append({**ranked[rank], "score": best.get(key, ranked[rank]["score"])})
    return named


def cluster_unknown_names(members: Sequence[str], counts: Counter, document_frequency: dict[str, int] | None
                          ) -> list[str]:
    """The names no chunk of the index holds (`fieldguide.names`) that the cluster's questions use,
    when at least `NAMED_SHARE` of its turns use one; else none. One stray wording does not
    make a cluster of answerable questions missing."""
    from fieldguide.names import unknown_names

    if document_frequency is None or not members:
        return []
    named = {wording: unknown_names(wording, document_frequency) for wording in members}
    turns = sum(counts[w] for w in members)
    if sum(counts[w] for w, names in named.items() if names) < NAMED_SHARE * turns:
        return []
    return list(dict.fromkeys(name for w in members for name in named[w]))


TURN_KINDS = ("disliked", "partial", "unanswered")


def turn_kind(turn: ProblemTurn) -> str:
    """What a problem turn asks of the docs team: "disliked" (answered and voted down: a reader's own
    verdict on an answer), "partial" (answered, and the reader told the quotes are only the closest),
    or "unanswered" (abstained on, or weakly supported). Turns are clustered within their kind: a
    voted-down answer clustered with turns abstained on or answered partially about the same topic
    was outvoted by them and reported as a topic not found, its vote lost."""
    if turn.answered and "disliked" in turn.reasons:
        return "disliked"
    if turn.answered and "partial" in turn.reasons:
        return "partial"
    return "unanswered"


def cited_sections(turns: list[ProblemTurn]) -> list[dict]:
    """The sections the turns' answers cited most, as a cluster names them (no score: not searched)."""
    cited = Counter((c.get("source", ""), tuple(c.get("heading_path") or []))
                    for t in turns for c in t.citations if c.get("source"))
    return [{"source": source, "heading_path": list(path), "score": None, "cited": n}
            for (source, path), n in cited.most_common(NEAREST)]


def partly_covered(turns: list[ProblemTurn]) -> list[ProblemTurn]:
    """Turns answered with a partial verdict (the reader was told the quotes are only the closest)."""
    return [t for t in turns if t.answered and "partial" in t.reasons]


def classify(turns: list[ProblemTurn], sections: list[dict], strong: float, noise: float,
             topic: TopicWords | None = None, margin: float | None = None,
             each: Sequence[list[dict]] | None = None,
             unknown: Sequence[str] = ()) -> tuple[str, str, str, list[dict]]:
    """(kind, reason, action, nearest) of one cluster: `sections` from the broad search, best
    first; `topic` its topic words (None: not known, the levels alone decide); `margin` how
    close to the best a further candidate must score to be named (`named_sections`); `each`,
    when given, each searched wording's own ranking, and the named sections are then each
    wording's own (`named_per_wording`); `unknown`, the names its questions use that no chunk of
    the index holds (`cluster_unknown_names`): such a cluster is missing whatever else scores.
    The levels go by the best score either way."""
    disliked = [t for t in turns if t.answered and "disliked" in t.reasons]
    if len(disliked) * 2 > len(turns):
        nearest = cited_sections(disliked)
        comments = [c for t in disliked for c in t.comments]
        reason = f"{len(disliked)} of {len(turns)} answers were voted down"
        if comments:
            reason += "; readers said: " + " | ".join(f'"{c}"' for c in comments[:3])
        where = ", ".join(section_name(n["source"], n["heading_path"]) for n in nearest) or "the cited sections"
        return ("disliked", reason, f"Read the answers and {where}: correct or complete the section the "
                "answers came from, or add what readers asked for.", nearest)
    partial = partly_covered(turns)
    if len(partial) * 2 > len(turns):
        nearest = cited_sections(partial)
        where = ", ".join(section_name(n["source"], n["heading_path"]) for n in nearest) or "the cited sections"
        reason = (f"{len(partial)} of {len(turns)} answers told the reader the docs may not answer this and quoted "
                  f"only the closest passages ({where})")
        return ("partial", reason, f"The docs come close in {where} but do not say what was asked: add it there, "
                "or say plainly that it is not supported.", nearest)
    nearest = named_per_wording(each, margin) if each else named_sections(sections, margin)
    first = max((n for n in nearest if n["score"] is not None), key=lambda n: n["score"], default=None)
    top = first["score"] if first is not None else None
    best = f"{top:.3f}" if top is not None else "nothing"
    if unknown:
        names = ", ".join(f'"{name}"' for name in unknown)
        reason = (f"the questions name {names}, which no chunk of the docs holds; best candidate {best} "
                  f"(strong level {strong:.3f}, noise {noise:.3f})")
        return ("missing", reason, "Write a section on this topic (or say plainly that it is not supported); "
                "the docs never name it.", nearest[:NEAREST])
    if topic is not None and topic.unknown_share >= UNKNOWN_TOPIC_SHARE:
        unknown = ", ".join(f'"{w}"' for w in topic.unknown)
        reason = (f"the questions turn on words the docs do not use ({unknown}: in at most "
                  f"{PASSING_MENTION_CHUNKS} chunks of the index, or at most {FEW_CHUNKS} and in no heading; "
                  f"{topic.unknown_share:.0%} of the weight of the "
                  f"topic words {', '.join(w for w, _, _ in topic.words)}); best candidate {best} "
                  f"(strong level {strong:.3f}, noise {noise:.3f})")
        return ("missing", reason, "Write a section on this topic (or say plainly that it is not supported); "
                "the docs do not name it.", nearest[:NEAREST])
    # The strong level tells a covered topic from an absent one by score alone. When the topic
    # words are known and the docs use them, that question is settled, and a candidate above the
    # noise (what off-topic questions reach) is evidence enough that the docs discuss it.
    level, level_name = (noise, "noise level") if topic is not None else (strong, "strong level")
    if top is not None and top >= level:
        names = ", ".join(section_name(n["source"], n["heading_path"]) for n in nearest if n["score"] >= level)
        reason = (f"the broader search finds {section_name(first['source'], first['heading_path'])} "
                  f"at {top:.3f}, above the index's {level_name} {level:.3f} (noise {noise:.3f}, strong "
                  f"{strong:.3f})")
        if topic is not None:
            reason += f"; the docs use most of the topic words ({', '.join(w for w, _, _ in topic.words)})"
        return ("not_found", reason, f"The docs cover this in {names}, but answers did not find it: use the "
                "readers' wording (see the questions) in that section's heading or opening sentence, or add "
                "a short FAQ entry that links to it.", nearest)
    reason = (f"nothing in the index stands out even with the broader search (best {best}, strong level "
              f"{strong:.3f}, noise {noise:.3f})")
    return ("missing", reason, "Write a section on this topic (or say plainly that it is not supported); "
            "nothing in the docs answers it.", nearest[:NEAREST])


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


# --- output -------------------------------------------------------------------------------

KIND_TITLES = {"missing": "Missing from the docs", "not_found": "In the docs but not found",
               "disliked": "Answered but disliked", "partial": "Only partly covered"}


def _nearest_text(cluster: Cluster) -> str:
    parts = []
    for n in cluster.nearest:
        name = section_name(n["source"], n["heading_path"])
        parts.append(f"{name} ({n['score']:.3f})" if n.get("score") is not None else name)
    return "; ".join(parts)


def render_json(report: GapReport) -> str:
    return json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n"


def render_csv(report: GapReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["kind", "count", "questions", "nearest", "action", "reason"])
    for c in report.clusters:
        writer.writerow([c.kind, c.count, " | ".join(c.wordings[:5]), _nearest_text(c), c.action, c.reason])
    return out.getvalue()


def _header(report: GapReport) -> str:
    s = report.summary
    line = (f"{s.turns} turns read, {len(s.problems)} needed attention, {len(report.clusters)} topics.")
    if s.unchecked:
        line += (f" {s.unchecked} answered turns carry no sentence checks (stored before answers had them), "
                 "so weak support could not be counted for them.")
    return line


def render_md(report: GapReport) -> str:
    lines = ["# What to write or fix", "", _header(report), ""]
    if not report.clusters:
        lines.append("Nothing to do: no turn abstained, lacked support or was voted down.")
    for number, c in enumerate(report.clusters, start=1):
        lines += [f"## {number}. {KIND_TITLES[c.kind]}: \"{c.wordings[0]}\" ({c.count} turns)", "",
                  f"- **What to do:** {c.action}", f"- **Why:** {c.reason}"]
        if c.nearest:
            lines.append("- **Nearest sections:** " + _nearest_text(c))
        lines.append("- **Wordings:**")
        lines += [f"  - {w}" for w in c.wordings[:5]]
        if len(c.wordings) > 5:
            lines.append(f"  - … and {len(c.wordings) - 5} more")
        lines.append("")
    return "\n".join(lines) + "\n"


def render_html(report: GapReport, top: int = 10) -> str:
    """One self-contained page: counts, a bar chart of the top gaps (inline SVG), the task list."""
    e = html.escape
    colours = {"missing": "#c0392b", "not_found": "#d68910", "disliked": "#7d3c98", "partial": "#2e86c1"}
    kinds = Counter()
    for c in report.clusters:
        kinds[c.kind] += c.count
    shown = report.clusters[:top]
    widest = max((c.count for c in shown), default=1)
    bar_h, label_w, chart_w = 26, 360, 320
    bars = []
    for i, c in enumerate(shown):
        y = i * bar_h
        width = max(2, round(chart_w * c.count / widest))
        label = c.wordings[0] if len(c.wordings[0]) <= 55 else c.wordings[0][:54] + "…"
        bars.append(f'<text x="{label_w - 8}" y="{y + 17}" text-anchor="end">{e(label)}</text>'
                    f'<rect x="{label_w}" y="{y + 4}" width="{width}" height="{bar_h - 8}" fill="{colours[c.kind]}">'
                    f'<title>{e(KIND_TITLES[c.kind])}: {c.count}</title></rect>'
                    f'<text x="{label_w + width + 6}" y="{y + 17}">{c.count}</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + chart_w + 60}" '
           f'height="{max(1, len(shown)) * bar_h}" role="img" aria-label="top gaps by turns">{"".join(bars)}</svg>')
    cards = "".join(f'<div class="card" style="border-color:{colours[k]}"><b>{kinds.get(k, 0)}</b> '
                    f'{e(KIND_TITLES[k].lower())}</div>' for k in KINDS)
    rows = []
    for number, c in enumerate(report.clusters, start=1):
        wordings = "".join(f"<li>{e(w)}</li>" for w in c.wordings[:5])
        nearest = e(_nearest_text(c)) or "—"
        rows.append(f'<section><h2><span class="tag" style="background:{colours[c.kind]}">'
                    f'{e(KIND_TITLES[c.kind])}</span> {number}. {e(c.wordings[0])} <small>({c.count} turns)</small></h2>'
                    f'<p><b>What to do:</b> {e(c.action)}</p><p><b>Why:</b> {e(c.reason)}</p>'
                    f'<p><b>Nearest sections:</b> {nearest}</p><ul>{wordings}</ul></section>')
    body = "".join(rows) or "<p>Nothing to do: no turn abstained, lacked support or was voted down.</p>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Docs gaps</title>
<style>
body{{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}}
.cards{{display:flex;gap:1rem;margin:1rem 0}}.card{{border-left:6px solid;padding:.5rem 1rem;background:#f6f6f6}}
.card b{{font-size:1.4rem}}svg text{{font-size:12px;fill:#222}}section{{border-top:1px solid #ddd;padding:.5rem 0}}
.tag{{color:#fff;border-radius:4px;padding:0 .4rem;font-size:.8rem;vertical-align:middle}}h2{{font-size:1.05rem}}
</style></head><body>
<h1>What to write or fix</h1><p>{e(_header(report))}</p>
<div class="cards">{cards}</div>
<h2>Top gaps</h2>{svg}
{body}
</body></html>
"""


RENDERERS = {"md": render_md, "csv": render_csv, "json": render_json, "html": render_html}


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
