import pytest

from fieldguide.settings import Settings
from ingest.chunker import Chunker


@pytest.fixture(scope="session")
def settings() -> Settings:
    # Defaults only: a developer's .env or FIELDGUIDE_* variables must not change golden output.
    return Settings(_env_file=None, embedding_model=None, merge_child_max_tokens=48, merge_max_tokens=200,
                    token_limit_fraction=0.85, overlap_tokens=24)


@pytest.fixture(scope="session")
def chunker(settings) -> Chunker:
    return Chunker(settings)
