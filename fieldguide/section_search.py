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
  exp"). When it is no word of the index, it is completed to the index's most common word that
  starts with it ("export"), for the vector and the scorer alike; a word the index knows is left
  as typed, so a finished query ranks exactly as the pipeline ranks it.
* query vectors are cached (`QueryVectors`): a reader who types, deletes and retypes, or many
  readers who type the same start of a question, pay for the embedding once.

Snippets are HTML: the chunk's text as a reader sees it (Markdown links and images reduced to
their text, formatting marks dropped), HTML-escaped, with `<mark>` around the words that match
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
COMPLETION_SCAN = 5000  # words of the vocabulary looked through per completion, at most

_FORMAT = re.compile(r"(^|\n)\s{0,3}(#{1,6}\s+|>\s?|[-*+]\s+|\d+[.)]\s+)|[*_`~|]+|<[^>\n]{1,200}>")
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


class Vocabulary:
    """The index's words in order, with how many chunks hold each: for completing a typed
    fragment to the most common word it starts."""

    def __init__(self, document_frequency: dict[str, int]):
        self.frequency = document_frequency
        self.terms = sorted(document_frequency)

    def complete(self, fragment: str) -> str | None:
        """The most common word of the index that starts with `fragment` (and is longer); None
        when `fragment` is a word of the index itself, too short, or starts none."""
        fragment = normalise(fragment)
        if len(fragment) < MIN_FRAGMENT or fragment in self.frequency:
            return None
        start = bisect.bisect_left(self.terms, fragment)
        best, best_count = None, 0
        for term in self.terms[start:start + COMPLETION_SCAN]:
            if not term.startswith(fragment):
                break
            count = self.frequency[term]
            if count > best_count:
                best, best_count = term, count
        return best


def completed_query(query: str, vocabulary: Vocabulary | None) -> str:
    """`query` with its unfinished last word completed (see the module doc); as typed when it
    ends in a blank or the last word is a word of the index."""
    if vocabulary is None or query.endswith(" "):
        return query.strip()
    match = re.search(r"(\w+)$", query, re.UNICODE)
    if match is None:
        return query.strip()
    completion = vocabulary.complete(match.group(1))
    if completion is None:
        return query.strip()
    return (query[:match.start(1)] + completion).strip()


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
    """Chunk Markdown as a reader would read it in one line: link texts, no marks, no tags."""
    text = link_texts(markdown or "")
    text = _FORMAT.sub(lambda m: (m.group(1) or "") if m.group(2) else " ", text)
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
    if prefix:
        wanted.append(normalise(prefix))

    def matches(token: str) -> bool:
        folded = normalise(token)
        return any(folded == w or (len(w) >= 3 and folded.startswith(w)) for w in wanted)

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
    vocabulary: Vocabulary | None = None


def section_key(chunk: dict) -> tuple:
    return chunk.get("label") or None, chunk.get("source"), tuple(chunk.get("heading_path") or ())


def ranked_chunks(query: str, index: SearchIndex, *, search_k: int, min_similarity: float,
                  hybrid_alpha: float | None = None) -> list[dict]:
    """The pipeline's candidates for `query`, scored by its scorer, best first (each with
    `similarity` and `rerank_score`), as its search, threshold and rerank steps make them."""
    vector = index.vectors(query)
    if hybrid_alpha is None:
        found = index.store.near_vector(vector, search_k)
    else:
        found = index.store.hybrid(query, vector, search_k, alpha=hybrid_alpha)
    candidates = [dict(c) for c in found if c["similarity"] >= min_similarity]
    scores = index.scorer.score(query, candidates, term_stats=index.term_stats)
    for candidate, value in zip(candidates, scores):
        candidate["rerank_score"] = round(float(value), 4)
    candidates.sort(key=lambda c: -c["rerank_score"])  # stable: ties keep the search's order
    return candidates


def search_sections(query: str, index: SearchIndex, *, limit: int = DEFAULT_LIMIT, search_k: int = 20,
                    min_similarity: float = 0.25, hybrid_alpha: float | None = None,
                    url_for: Callable[[dict], str | None] = lambda chunk: None) -> list[dict]:
    """Ranked sections for `query` (already `clean_query`-ed): {"source", "heading_path",
    "title", "snippet", "url", "score", "label"}, best first, one per section."""
    typed = query
    query = completed_query(query, index.vocabulary)
    ranked = ranked_chunks(query, index, search_k=search_k, min_similarity=min_similarity, hybrid_alpha=hybrid_alpha)
    best: dict[tuple, dict] = {}
    for chunk in ranked:
        best.setdefault(section_key(chunk), chunk)
    fragment = None
    if not typed.endswith(" ") and query != typed.strip():
        fragment = re.search(r"(\w+)$", typed, re.UNICODE).group(1)  # the unfinished word, as typed
    highlight = marked_words(query, index.term_stats)
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
