"""The chunker's settings, read without pydantic so that `fieldguide chunks` starts fast.

Same names and sources as `fieldguide.settings.Settings`, which takes its defaults from
here: `FIELDGUIDE_<NAME>` in the environment first, then a `.env` file in the working
folder; names are case-insensitive.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

ENV_PREFIX = "FIELDGUIDE_"


@dataclass(frozen=True)
class ChunkingSettings:
    merge_child_max_tokens: int = 48
    merge_max_tokens: int = 200
    token_limit_fraction: float = 0.85
    overlap_tokens: int = 24
    embedding_model: str | None = None
    # The docs' site dialect (`ingest.dialects`): auto (detected from the folder's files),
    # commonmark (none), or families such as "mkdocs" or "docusaurus,mdc".
    docs_dialect: str | None = None

    @classmethod
    def from_environment(cls, env_file: str | Path = ".env") -> "ChunkingSettings":
        """Raises ValueError naming the variable when a value has the wrong type."""
        values = _dotenv(Path(env_file))
        values.update((k.upper(), v) for k, v in os.environ.items() if k.upper().startswith(ENV_PREFIX))
        chosen = {}
        for spec in fields(cls):
            raw = values.get(ENV_PREFIX + spec.name.upper())
            if raw is None:
                continue
            kind = spec.type if isinstance(spec.type, str) else spec.type.__name__
            try:
                if kind == "int":
                    chosen[spec.name] = int(raw)
                elif kind == "float":
                    chosen[spec.name] = float(raw)
                else:
                    chosen[spec.name] = raw or None
            except ValueError:
                raise ValueError(f"{ENV_PREFIX}{spec.name.upper()}={raw!r}: expected {kind}") from None
        return cls(**chosen)


CHUNKING_DEFAULTS = ChunkingSettings()


def _dotenv(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    from dotenv import dotenv_values  # only when there is a file to read

    return {k.upper(): v for k, v in dotenv_values(path).items()
            if v is not None and k.upper().startswith(ENV_PREFIX)}
