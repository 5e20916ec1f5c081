"""What each cluster asks of the docs team: its kind, reason, action and the sections it names."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from fieldguide.gaps.search import section_name
from fieldguide.gaps.topics import FEW_CHUNKS, PASSING_MENTION_CHUNKS, TopicWords
from fieldguide.gaps.turns import ProblemTurn

KINDS = ("missing", "not_found", "disliked", "partial")
NEAREST = 3  # sections named per cluster, at least (when found)
# ... and up to this many when they score within the index's abstain margin of the best: a
# section that does not stand out from the best by the index's own unit of standing out is as
# likely to be the one the readers needed (far-worded questions often rank it 4th or 5th).
NEAREST_MAX = 5
# A cluster is "missing" when at least this share of its topic words' weight is on words the
# docs do not use: most of what the readers ask about is something the docs never name.
UNKNOWN_TOPIC_SHARE = 0.5


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
