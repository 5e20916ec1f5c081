"""The word-cached token count must be the tokenizer's own count, character for character,
and the chunker's settings must read the same sources as the application's settings."""
import string

import pytest
from hypothesis import given, settings as hsettings
from hypothesis import strategies as st

from ingest.settings import CHUNKING_DEFAULTS, ChunkingSettings
from ingest.tokens import MAX_CACHED_WORD_CHARS, TokenCounter

TRICKY = ["[MASK]", "x[CLS]y", "[link](http://a.b/c?d=e&f)", "naïve", "Ünïcödé", "日本語", "ΣΑΣ", "İstanbul",
          "emoji🙂!", "tab\there", "nul\x00byte", "ctrl\x1fchar", "\ufeffbom", "a" * 150, "ab-cd_ef.gh",
          "UPPER", "don't", "--flag=value", "`code`", "**bold**", "x" * (MAX_CACHED_WORD_CHARS + 10), "  ", ""]


@pytest.fixture(scope="module")
def counter(chunker) -> TokenCounter:
    return TokenCounter(chunker.counter.model_dir)  # a fresh cache: every word is learned here


def truth(counter, text):
    return len(counter._tokenizer.encode(text, add_special_tokens=False))


def test_the_ascii_shortcut_is_on_for_the_default_model(counter):
    assert counter._bert_ascii and counter._lowercase


def test_tricky_words_count_exactly(counter):
    texts = TRICKY + [" ".join(TRICKY), "  double  spaces  ", " ".join(TRICKY[::-1])]
    assert counter.count_pieces(texts) == [truth(counter, t) for t in texts]
    assert counter.count_pieces(texts) == [truth(counter, t) for t in texts]  # now from the cache


@hsettings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=string.printable + "éß€—’日🙂\u0301\u00a0", max_size=40), max_size=12))
def test_any_text_counts_exactly(counter, words):
    text = " ".join(words)
    assert counter.count_piece(text) == truth(counter, text)
    assert counter.count_many([text]) == [counter.count(text)]


def test_word_tokens_add_up_and_point_at_words(counter):
    text = "Click  **Save** to keep [the](x) budget-rules naïve"
    spans = counter.word_tokens(text)
    assert sum(tokens for _, tokens in spans) == truth(counter, text)
    assert [text[start:].split(" ")[0] for start, _ in spans] == text.split()


def test_chunking_settings_defaults_match_the_application_settings(settings):
    for name in ("merge_child_max_tokens", "merge_max_tokens", "token_limit_fraction", "overlap_tokens"):
        assert getattr(CHUNKING_DEFAULTS, name) == getattr(settings, name)


def test_chunking_settings_read_environment_then_dotenv(tmp_path, monkeypatch):
    env_file = tmp_path / ".env"
    env_file.write_text("FIELDGUIDE_OVERLAP_TOKENS=7\nFIELDGUIDE_MERGE_MAX_TOKENS=99\n")
    monkeypatch.setenv("fieldguide_merge_max_tokens", "120")  # the environment wins, any case
    for name in ("FIELDGUIDE_OVERLAP_TOKENS", "FIELDGUIDE_TOKEN_LIMIT_FRACTION", "FIELDGUIDE_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)
    chosen = ChunkingSettings.from_environment(env_file)
    assert (chosen.overlap_tokens, chosen.merge_max_tokens) == (7, 120)
    assert chosen.token_limit_fraction == CHUNKING_DEFAULTS.token_limit_fraction


def test_a_setting_of_the_wrong_type_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("FIELDGUIDE_OVERLAP_TOKENS", "lots")
    with pytest.raises(ValueError, match="FIELDGUIDE_OVERLAP_TOKENS='lots': expected int"):
        ChunkingSettings.from_environment(tmp_path / "absent.env")
