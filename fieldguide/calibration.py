"""Per-index calibration: the thresholds that decide abstention, measured on the index itself.

A score means different things in different documentation: on one product's docs an
answerable question's best chunk scores 0.6, on another's 0.5, and a single constant
`rerank_min` abstains too often on the second or too rarely on the first. So the index
measures its own scale with probe questions that no product's documentation answers
(`OFF_TOPIC_PROBES`: cooking, geography, sport, nature), run through the real search and the
active scorer exactly as a user's question would be:

* `rerank_min`, the strict minimum of the cap: the best score any probe reached (`noise_floor`).
  A chunk that matches a question no better than the docs match "how do I boil an egg" is
  noise. A probe that scores far above all the others (more than `OUTLIER_MADS` median absolute
  deviations above their median) has found something the docs really discuss, not noise: docs
  with a localisation page answer "What language is spoken in Brazil?" with their Brazilian
  Portuguese translation. Such a probe does not set the floor; the best of the others does.
* `margin_unit`: how far the best of an unrelated pool of sections stands above their median by
  chance (the probes' median `top_margin`, one score per section): the index's unit of
  "standing out".
* `abstain_margin` = `MARGIN_FACTOR` margin units: a question whose best candidate does not
  stand out from its own candidates by that much abstains (`nodes.cap`).
* `screen_share`: the share of screen chunks in the index, the base rate the intent evidence
  is measured against (`nodes.weigh_intent`).

`calibrate` runs at ingest when the index changed enough to move the figures (the figures go
into the manifest and into `fieldguide ingest --json`) and, for an index built before
calibration existed or calibrated for another scorer, once per process on first use.

Enough: the probes' figures are maxima and medians over 30 questions' best candidates, so a few
changed chunks rarely move them. An ingest that wrote and deleted fewer than
`RECALIBRATE_SHARE` of the index's chunks since the figures were measured (`changed_since`
counts them, summed over ingests) keeps them and only recounts `screen_share` and `chunks`,
which cost two aggregations; docs/BENCHMARKS.md has the drift measured against the share changed.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, replace

CALIBRATION_VERSION = 3  # 3: a probe far above the others no longer sets rerank_min
# How many times the probes' median margin a real question's best candidate must reach:
# chosen on both development corpora (docs/TUNING.md, "Abstention").
MARGIN_FACTOR = 1.2
# A probe whose best score lies more than this many median absolute deviations above the probes'
# median found a topic of the docs: it does not set rerank_min. On the development corpora the
# highest probe sits 4.8 and 5.7 deviations above the median (no outlier: the floor is the plain
# maximum); on a docs set with a localisation page, "What language is spoken in Brazil?" sat
# 15.4 above (docs/TUNING.md, "Abstention").
OUTLIER_MADS = 8.0
# Candidates whose scores make up the pool a margin is measured against.
MARGIN_POOL = 20
# Chunks written plus chunks deleted since the probes last ran, as a share of the index, below
# which an ingest keeps the probes' figures (an edited file counts its chunks twice: old out,
# new in). Chosen from the drift measured with benchmarks/bench_calibration_drift.py.
RECALIBRATE_SHARE = 0.05

OFF_TOPIC_PROBES = (
    "What is the boiling point of water at high altitude?",
    "How long should I boil an egg for a soft yolk?",
    "Who painted the ceiling of the Sistine Chapel?",
    "What is the capital city of Australia?",
    "How do I change a flat tyre on a bicycle?",
    "Why is the sky blue during the day?",
    "How many players are on a football team?",
    "What is the best way to learn to play the guitar?",
    "How do I get a red wine stain out of a carpet?",
    "When did the first person walk on the moon?",
    "How do I repot a houseplant without hurting the roots?",
    "What causes thunder during a storm?",
    "How much water should a dog drink each day?",
    "Which vitamins are found in oranges?",
    "How do I tie a bowline knot?",
    "What is the difference between a violin and a viola?",
    "How do I train for my first marathon?",
    "Why do cats purr?",
    "What should I pack for a week of hiking in the mountains?",
    "How do volcanoes form?",
    "Can I freeze cooked rice and eat it later?",
    "Where do penguins live in the wild?",
    "How is glass made from sand?",
    "What is a good age to start teaching children to swim?",
    "How do I sharpen a kitchen knife with a whetstone?",
    "Why does bread go stale?",
    "What is the tallest mountain in Africa?",
    "How do bees make honey?",
    "Should I water my lawn in the morning or the evening?",
    "What language is spoken in Brazil?",
)


@dataclass
class Calibration:
    rerank_min: float
    abstain_margin: float
    margin_unit: float
    screen_share: float
    scorer: str  # the scale the figures are on (`scorer_scale`)
    chunks: int
    probes: int
    probe_top: dict = field(default_factory=dict)  # median / q90 / max of the probes' best scores
    probe_margin: dict = field(default_factory=dict)  # median / q75 / max of the probes' margins
    version: int = CALIBRATION_VERSION
    changed_since: int = 0  # chunks written + deleted by ingests since the probes ran

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> "Calibration | None":
        if not isinstance(data, dict) or data.get("version") != CALIBRATION_VERSION:
            return None  # another version's figures are not comparable: calibrate again
        try:
            # figures stored before a field with a default existed read as that default
            return cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})
        except TypeError:  # a field without a default is missing
            return None

    def still_holds(self, changed_chunks: int, chunks: int) -> bool:
        """Whether the probes' figures can be kept after `changed_chunks` more chunks were written
        or deleted in an index now of `chunks` (see the module doc)."""
        if self.probes == 0 or chunks == 0:
            return False  # measured on an empty index, or nothing left to measure
        return self.changed_since + changed_chunks < RECALIBRATE_SHARE * chunks

    def recounted(self, changed_chunks: int, chunks: int, screen_chunks: int) -> "Calibration":
        """The same probe figures, with the index's size and screen share as they are now."""
        return replace(self, chunks=chunks, screen_share=round(screen_chunks / chunks, 4) if chunks else 0.0,
                       changed_since=self.changed_since + changed_chunks)


def scorer_scale(reranker) -> str:
    """The scale a scorer's numbers are on (its name and the parameters that change it)."""
    return getattr(reranker, "scale", None) or reranker.name


def section_scores(candidates: list[dict], scores: list[float]) -> list[float]:
    """The best score of each section (group id) among the candidates: a long section split into
    many parts counts once, so its parts cannot make up the pool the best one is measured against."""
    best: dict[str, float] = {}
    for candidate, score in zip(candidates, scores):
        key = candidate.get("group_id") or candidate.get("chunk_id")
        best[key] = max(score, best.get(key, score))
    return list(best.values())


def top_margin(scores: list[float], pool: int = MARGIN_POOL) -> float:
    """How far the best score stands above the median of the best `pool` scores."""
    ranked = sorted(scores, reverse=True)[:pool]
    if not ranked:
        return 0.0
    return ranked[0] - statistics.median(ranked)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def noise_floor(tops: list[float], outlier_mads: float = OUTLIER_MADS) -> float:
    """The best of the probes' best scores, leaving out those more than `outlier_mads` median
    absolute deviations above their median (none is left out when the deviations are all 0)."""
    middle = statistics.median(tops)
    spread = statistics.median(abs(top - middle) for top in tops)
    if spread == 0:
        return max(tops)
    return max(top for top in tops if top <= middle + outlier_mads * spread)


def calibrate(store, embeddings, reranker, term_stats, search_k: int = MARGIN_POOL) -> Calibration:
    """Run the probes through the store's search and `reranker` (see the module doc)."""
    chunks = store.count()
    screen = store.count_kind("screen") if chunks else 0
    tops, margins = [], []
    for probe in OFF_TOPIC_PROBES:
        candidates = store.near_vector(embeddings.embed_query(probe), search_k)
        if not candidates:
            continue
        scores = reranker.score(probe, candidates, term_stats=term_stats)
        tops.append(max(scores))
        margins.append(top_margin(section_scores(candidates, scores)))
    if not tops:  # an empty index: nothing to measure, nothing to find either
        return Calibration(0.0, 0.0, 0.0, 0.0, scorer_scale(reranker), chunks, 0)
    median_margin = statistics.median(margins)
    floor = noise_floor(tops)
    return Calibration(
        rerank_min=round(floor, 4),
        abstain_margin=round(MARGIN_FACTOR * median_margin, 4),
        margin_unit=round(median_margin, 4),
        screen_share=round(screen / chunks, 4),
        scorer=scorer_scale(reranker),
        chunks=chunks,
        probes=len(tops),
        probe_top={"median": round(statistics.median(tops), 4), "q90": round(_quantile(tops, 0.9), 4),
                   "max": round(max(tops), 4), "outliers": sum(1 for top in tops if top > floor)},
        probe_margin={"median": round(median_margin, 4), "q75": round(_quantile(margins, 0.75), 4),
                      "max": round(max(margins), 4)},
    )


def load_calibration(store, embeddings, reranker, term_stats) -> Calibration:
    """The manifest's calibration when it is for the active scorer; otherwise the index is
    calibrated now (kept by the caller for the process, not stored: `fieldguide ingest` stores it)."""
    manifest = store.manifest() or {}
    calibration = Calibration.from_dict(manifest.get("calibration"))
    if calibration is not None and calibration.scorer == scorer_scale(reranker):
        return calibration
    import logging

    logging.getLogger("fieldguide").info(
        "collection %s has no calibration for the %s scorer: calibrating now (re-run `fieldguide ingest` to store "
        "one)", getattr(store, "name", "?"), scorer_scale(reranker))
    return calibrate(store, embeddings, reranker, term_stats)


def count_term_stats(store):
    """Term statistics over every stored chunk (reads the whole collection back)."""
    from fieldguide.bm25 import TermStats, document_words

    return TermStats.from_documents(document_words(path, text) for path, text in store.iter_documents())

