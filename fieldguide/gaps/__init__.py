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

By job: `turns` reads the stored turns, `clusters` groups their questions, `search` searches
each cluster again, `topics` finds its topic words and unknown names, `classify` decides its
kind, `report` runs these in order, `render` writes the report as Markdown, CSV, JSON or HTML.
"""
from __future__ import annotations

# every name of the report, importable from the package as from the module it once was
from fieldguide.gaps.turns import (TURN_KINDS, ProblemTurn, TurnSummary, _add, _get, _stored_vector, parse_since,
                                   problem_turns, sentence_reasons, turn_kind, wording_vectors)
from fieldguide.gaps.clusters import CLUSTER_BLOCK, _close_pairs, _merge_close, cluster_questions, probe_threshold
from fieldguide.gaps.search import BROAD_K, PAGE_SUPPORT, BroadSearch, page_supported, ranked_sections, section_name
from fieldguide.gaps.topics import (FEW_CHUNKS, NAMED_SHARE, PASSING_MENTION_CHUNKS, TOPIC_WORDINGS, TOPIC_WORDS,
                                    TopicWords, cluster_unknown_names, passing_mention, topic_words, unit_mean)
from fieldguide.gaps.classify import (KINDS, NEAREST, NEAREST_MAX, UNKNOWN_TOPIC_SHARE, Cluster, cited_sections,
                                      classify, named_per_wording, named_sections, partly_covered)
from fieldguide.gaps.report import SEARCH_WORDINGS, GapReport, build_report, report_for
from fieldguide.gaps.render import (KIND_TITLES, RENDERERS, _header, _nearest_text, render_csv, render_html,
                                    render_json, render_md)
