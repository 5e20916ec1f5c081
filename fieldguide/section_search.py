"""Instant search: the best sections for what a reader has typed so far, without generation.

The same index and the same ranking as the query pipeline's first steps: the query's vector
(the index's embedding model), the pipeline's search (vector, or hybrid when `hybrid_alpha` is
set), its similarity threshold and its scorer (`fieldguide.reranker`: a cross-encoder when one is
configured, else cosine + BM25 with the index's term statistics). So a section that the MCP
tool `search_docs` or an answer ranks above another is ranked above it here too. What differs:

* one result per section (a split section's best part stands for it), with a title, the
  breadcrumb, a highlighted snippet and the section's URL;
* no routing, calibration cut or reassembly: a search box lists what matches best, it does not
  decide whether the docs answer;
* typing: the last word of a query that does not end in a space is usually cut short ("how do I
  exp"). When it is no word of the index, the scorer reads it completed: to the word starting with
  it that the candidates found for the query as typed hold most, weighted by its rarity in the
  index (`complete_fragment`: "booking fo" reads "booking form" among the booking form's sections,
  not "booking for"). The vector is that of the words finished so far ("booking"): the embedding
  model, which dominates a search's time, then runs once per word typed instead of once per
  keystroke (the vectors are cached), and a cut-off word, which the model would read as noise
  word pieces, does not move the search. A last word the index knows is read as it is, vector and
  all, so a finished query ranks exactly as the pipeline ranks it.
* query vectors are cached (`QueryVectors`): a reader who types, deletes and retypes, or many
  readers who type the same start of a question, pay for the embedding once.

Snippets are HTML: the chunk's text as a reader sees it (Markdown links and images reduced to
their text, formatting marks dropped, any HTML in the docs shown as text), HTML-escaped, with `<mark>` around the words that match
the query's distinctive words (those fewer than half the index's chunks hold, by its own term
statistics: no stop list, in any language).
"""
from __future__ import annotations

import bisect
import html
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

from fieldguide.headings import heading_labels, rendered_text
from fieldguide.words import link_texts, normalise, words

MAX_QUERY_CHARS = 300  # a search box holds a question's worth of words; longer is refused
DEFAULT_LIMIT = 8
MAX_LIMIT = 50
SNIPPET_CHARS = 180
# A query word held by at least this share of the chunks says nothing distinctive: not marked.
COMMON_SHARE = 0.5
# A typed fragment shorter than this is not completed (one letter matches everything).
MIN_FRAGMENT = 2

# Block marks at a line's start, and the HTML that only draws (images, line breaks): a blank.
# Other tags stay as text: docs that show an embed code mean it to be read.
_BLOCK = re.compile(r"(^|\n)\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+|\d+[.)]\s+)|<(?:img|br)\b[^>\n]{0,300}>|\|",
                    re.IGNORECASE)
# Emphasis and code marks: gone (an underscore only at a word's edge: snake_case stays).
_EMPHASIS = re.compile(r"[*`~]+|(?<!\w)_+|_+(?!\w)")
_SPACE = re.compile(r"\s+")
_TOKEN = re.compile(r"\w+", re.UNICODE)


class InvalidQuery(ValueError):
    """An empty or over-long query."""


def clean_query(query: str | None, max_chars: int = MAX_QUERY_CHARS) -> str:
    """The query with its blanks squeezed (a trailing blank kept: it says the last word is
    finished); InvalidQuery when it is empty or longer than `max_chars`."""
    raw = str(query or "")
    text = _SPACE.sub(" ", raw).strip()
    if not text:
        raise InvalidQuery("the query is empty")
    if len(text) > max_chars:
        raise InvalidQuery(f"the query is longer than {max_chars} characters")
    return text + (" " if raw[-1:].isspace() else "")


def last_fragment(query: str) -> str | None:
    """The unfinished last word of a query being typed (None when it ends in a blank)."""
    if query.endswith(" "):
        return None
    match = re.search(r"(\w+)$", query, re.UNICODE)
    return match.group(1) if match else None


def is_known_word(word: str, term_stats) -> bool:
    """Whether the index holds `word` (without term statistics every word counts as known)."""
    return term_stats is None or normalise(word) in term_stats.document_frequency


def complete_fragment(fragment: str, candidates: Sequence[dict], term_stats) -> str | None:
    """The word `fragment` most likely begins, from what the candidates hold (see the module doc);
    None when `fragment` is a word of the index itself, too short, or begins no candidate's word."""
    from fieldguide.bm25 import document_words

    fragment = normalise(fragment)
    if len(fragment) < MIN_FRAGMENT:
        return None
    if term_stats is not None and fragment in term_stats.document_frequency:
        return None
    held: dict[str, int] = {}
    for candidate in candidates:
        for word in set(document_words(candidate.get("heading_path"), candidate.get("text") or "")):
            if word.startswith(fragment) and word != fragment:
                held[word] = held.get(word, 0) + 1
    if not held:
        return None
    rarity = term_stats.idf if term_stats is not None and term_stats.documents else (lambda word: 1.0)
    return max(sorted(held), key=lambda word: held[word] * rarity(word))


class QueryVectors:
    """Query vectors by query text, the most recent `size` kept (thread-safe)."""

    def __init__(self, embeddings, size: int = 2048):
        self.embeddings = embeddings
        self.size = size
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, text: str) -> list[float]:
        with self._lock:
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
                return vector
        vector = [float(x) for x in self.embeddings.embed_query(text)]
        with self._lock:
            self._vectors[text] = vector
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return vector


def plain_text(markdown: str) -> str:
    """Chunk Markdown as a reader would read it in one line: link texts, no marks, no images."""
    text = _EMPHASIS.sub("", _BLOCK.sub(" ", link_texts(markdown or "")))
    return _SPACE.sub(" ", text).strip()


def marked_words(query: str, term_stats) -> list[str]:
    """The query's words worth marking in a snippet: not held by most chunks."""
    found = list(dict.fromkeys(words(query)))
    if term_stats is None or not term_stats.documents:
        return found
    limit = COMMON_SHARE * term_stats.documents
    return [w for w in found if term_stats.document_frequency.get(w, 0) < limit]


def snippet(text: str, query_words: Sequence[str], prefix: str | None = None, size: int = SNIPPET_CHARS) -> str:
    """HTML: the stretch of `text` (plain) of about `size` characters holding the most matches,
    escaped, each match in <mark>. A word matches a query word it equals or begins with (at
    least three letters: "export" marks "exporting"), or `prefix`, the unfinished last word."""
    wanted = [w for w in query_words if w]
    start_of = normalise(prefix) if prefix else None

    def matches(token: str) -> bool:
        folded = normalise(token)
        return (any(folded == w or (len(w) >= 3 and folded.startswith(w)) for w in wanted)
                or bool(start_of and folded.startswith(start_of)))

    spans = [(m.start(), m.end()) for m in _TOKEN.finditer(text) if matches(m.group(0))]
    start = 0
    if spans and len(text) > size:
        best, best_count = spans[0][0], 0
        for i, (first, _) in enumerate(spans):  # the window starting a little before each match
            count = bisect.bisect_left([s for s, _ in spans], first + size, lo=i) - i
            if count > best_count:
                best, best_count = first, count
        start = max(0, best - size // 6)
        while start > 0 and not text[start - 1].isspace():  # begin at a word
            start -= 1
    end = min(len(text), start + size)
    while end < len(text) and not text[end].isspace() and end - start < size + 30:  # end at a word
        end += 1
    out, cursor = [], start
    for first, last in spans:
        if first < start or last > end:
            continue
        out.append(html.escape(text[cursor:first]))
        out.append("<mark>" + html.escape(text[first:last]) + "</mark>")
        cursor = last
    out.append(html.escape(text[cursor:end]))
    return ("…" if start > 0 else "") + "".join(out).strip() + ("…" if end < len(text) else "")


@dataclass
class SearchIndex:
    """What a search needs of the index: the store (limited to doc sets as asked), the query
    vectors, the pipeline's scorer and the index's term statistics."""
    store: Any
    vectors: Callable[[str], list[float]]
    scorer: Any
    term_stats: Any


def section_key(chunk: dict) -> tuple:
    return chunk.get("label") or None, chunk.get("source"), tuple(chunk.get("heading_path") or ())


def ranked_chunks(query: str, index: SearchIndex, *, search_k: int, min_similarity: float,
                  hybrid_alpha: float | None = None, complete: bool = False) -> tuple[list[dict], str]:
    """(the pipeline's candidates for `query` scored by its scorer, best first, each with
    `similarity` and `rerank_score`, as its search, threshold and rerank steps make them; the
    query the scorer read). `complete`: the query is being typed (`complete_fragment`)."""
    fragment = last_fragment(query) if complete else None
    query = query.strip()
    finished = query
    if fragment and not is_known_word(fragment, index.term_stats):
        finished = query[:len(query) - len(fragment)].strip() or query  # the words typed to their end
    else:
        fragment = None
    vector = index.vectors(finished)
    if hybrid_alpha is None:
        found = index.store.near_vector(vector, search_k)
    else:
        found = index.store.hybrid(query, vector, search_k, alpha=hybrid_alpha)
    candidates = [dict(c) for c in found if c["similarity"] >= min_similarity]
    scored = query
    completion = complete_fragment(fragment, candidates, index.term_stats) if fragment else None
    if completion:
        scored = query[:len(query) - len(fragment)] + completion
    scores = index.scorer.score(scored, candidates, term_stats=index.term_stats)
    for candidate, value in zip(candidates, scores):
        candidate["rerank_score"] = round(float(value), 4)
    candidates.sort(key=lambda c: -c["rerank_score"])  # stable: ties keep the search's order
    return candidates, scored


def search_sections(query: str, index: SearchIndex, *, limit: int = DEFAULT_LIMIT, search_k: int = 20,
                    min_similarity: float = 0.25, hybrid_alpha: float | None = None,
                    url_for: Callable[[dict], str | None] = lambda chunk: None, complete: bool = True) -> list[dict]:
    """Ranked sections for `query` (as `clean_query` leaves it: a trailing blank says the last
    word is finished): {"source", "heading_path", "title", "snippet", "url", "score", "label"},
    best first, one per section. `complete=False` reads an unfinished last word as typed (only
    to measure what completing it buys)."""
    ranked, scored = ranked_chunks(query, index, search_k=search_k, min_similarity=min_similarity,
                                   hybrid_alpha=hybrid_alpha, complete=complete)
    best: dict[tuple, dict] = {}
    for chunk in ranked:
        best.setdefault(section_key(chunk), chunk)
    fragment = last_fragment(query)  # marked where a word starts with it, as typed
    highlight = marked_words(scored, index.term_stats)
    results = []
    for chunk in list(best.values())[:limit]:
        path = heading_labels(chunk.get("heading_path"))
        title = path[-1] if path else file_title(chunk.get("source") or "")
        results.append({
            "source": chunk.get("source"),
            "heading_path": path,
            "title": rendered_text(title) if path else title,
            "snippet": snippet(plain_text(chunk.get("text") or ""), highlight, fragment),
            "url": url_for(chunk),
            "score": chunk["rerank_score"],
            "label": chunk.get("label") or None,
        })
    return results


def file_title(source: str) -> str:
    """A page's title from its file name, for a page without headings."""
    name = source.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return name.replace("-", " ").replace("_", " ").strip().capitalize() or source
