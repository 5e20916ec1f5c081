"""The per-run options of the query graph: what a run may ask for, and within which bounds.

Options are declared once, as the fields of `QueryOptions`, each with its bounds and its
description. The graph declares the class as its context schema, so LangServe's
`/rag/config_schema` and playground, RemoteRunnable clients and LangGraph Studio all see
the same options, and every run is validated against them. A run sets them through its
config (`configurable`) or, with LangGraph's runtime API, its `context`:

    graph.invoke({"question": "..."}, {"configurable": {"max_chunks": 2}})

A value out of bounds is refused (`InvalidOption`, naming the field) instead of being
coerced or dropped. An option left unset (None) takes the setting of the same name
(`Settings`, i.e. `FIELDGUIDE_<NAME>`); an option no setting backs has its own default.
An option marked `PublicLimit("setting")` is bounded further on the public routes by that
setting (`check_public_limits`), so no client can ask for unbounded work.

An option backed by a setting is declared once, as that setting (`fieldguide.settings`, marked
`PerRequest` with the option's bounds): its name, default and description come from there. The
options no setting backs are the switches of `QueryOptionsBase`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from fieldguide.errors import FieldguideError
from fieldguide.settings import PerRequest, Settings
from graph.resources import resources_for


@dataclass(frozen=True)
class PublicLimit:
    """Marks an option whose value a public route caps by the named setting."""

    setting: str


class InvalidOption(FieldguideError, ValueError):
    """A run option of the wrong type, out of its bounds, or above a public route's limit."""

    def __init__(self, field: str, message: str, value: Any = None):
        super().__init__(f"option {field}: {message}")
        self.field = field
        self.reason = message
        self.value = value


# Short names some callers use (`fieldguide eval --ablate`, older configs).
OPTION_ALIASES = {"k": "search_k", "reranker": "use_reranker", "reassembly": "use_reassembly",
                  "routing": "use_routing"}
# Where LangGraph keeps a run's Runtime (and so its `context`) in the config.
RUNTIME_KEY = "__pregel_runtime"


class QueryOptionsBase(BaseModel):
    """What every run option shares: the options no setting backs (stages switched off to measure
    them), how a request's values are read and checked, and how unset ones are filled in. The
    options backed by a setting are added from `Settings` (`QueryOptions`)."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    use_reranker: bool = Field(True, description="Rerank the candidates; off: the similarity is the score.")
    use_reassembly: bool = Field(True, description="Put split sections back together (off only to measure it).")
    use_routing: bool = Field(True, description="Route by intent (off: every question conceptual).")

    @field_validator("verify", "condense", mode="before", check_fields=False)
    @classmethod
    def _choice_in_any_case(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("labels", mode="before", check_fields=False)
    @classmethod
    def _labels(cls, value: Any) -> Any:
        from fieldguide.labels import parse_labels

        if value is None or isinstance(value, (str, list, tuple)):
            return parse_labels(value)  # InvalidLabel is a ValueError: the option is refused by name
        return value

    @classmethod
    def validate_overrides(cls, overrides: dict[str, Any], *, strict: bool = False) -> QueryOptions:
        """The options `overrides` asks for, unresolved (unset ones stay None). `strict` also
        refuses names that are no option (a typo on the command line)."""
        named = {OPTION_ALIASES.get(key, key): value for key, value in (overrides or {}).items()}
        if strict:
            unknown = sorted(set(named) - set(cls.model_fields))
            if unknown:
                raise InvalidOption(unknown[0], "no such option (known: " + ", ".join(cls.model_fields) + ")")
        wanted = {name: value for name, value in named.items() if name in cls.model_fields and value is not None}
        try:
            return cls.model_validate(wanted)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"]) or "options"
            raise InvalidOption(field, error["msg"], error.get("input")) from None

    @classmethod
    def from_config(cls, config: dict | None, settings: Settings | None = None) -> QueryOptions:
        settings = settings or resources_for(config).settings
        return cls.validate_overrides(requested_options(config)).resolved(settings)

    def resolved(self, settings: Settings) -> QueryOptions:
        """Every unset option filled in from the setting of the same name."""
        unset = {name: getattr(settings, name) for name in type(self).model_fields
                 if getattr(self, name) is None and name in type(settings).model_fields}
        for name in ("verify", "condense", "labels"):  # a setting's value is checked like a request's
            if isinstance(unset.get(name), str):
                unset[name] = getattr(type(self).validate_overrides({name: unset[name]}), name)
        # The sentence check's defaults (settings leave them unset): `verify` is the same for every
        # generator, `min_support` depends on it.
        if unset.get("verify", self.verify) is None:
            unset["verify"] = DEFAULT_VERIFY
        if unset.get("min_support", self.min_support) is None:
            unset["min_support"] = default_min_support(settings.chat_provider)
        if unset.get("prompt_context_words", self.prompt_context_words) is None:
            unset["prompt_context_words"] = default_prompt_context_words(settings.chat_provider)
        return self.model_copy(update=unset) if unset else self


def _per_request_fields() -> dict[str, Any]:
    """One option per setting marked `PerRequest`, in the settings' order: unset (None) by default,
    which means the setting's value, described as the setting is, bounded by the marker."""
    fields = {}
    for name, field in Settings.model_fields.items():
        marker = next((m for m in field.metadata if isinstance(m, PerRequest)), None)
        if marker is None:
            continue
        annotation = Optional[marker.as_type or field.annotation]
        if marker.public_limit:
            annotation = Annotated[annotation, PublicLimit(marker.public_limit)]
        bounds = {bound: getattr(marker, bound) for bound in ("ge", "le") if getattr(marker, bound) is not None}
        fields[name] = (annotation, Field(None, description=field.description, **bounds))
    return fields


QueryOptions = create_model("QueryOptions", __base__=QueryOptionsBase, __module__=__name__,
                            __doc__="Per-run options of the query graph. Unset (None): the setting of the same name.",
                            **_per_request_fields())


def option_annotations(limits: Settings | None = None, *, optional: bool = True) -> dict[str, Any]:
    """name -> the option's type with its bounds (`Annotated`), for schemas built elsewhere
    (LangServe's config schema). With `limits`, each `PublicLimit` becomes one more upper
    bound: what a public route accepts. `optional=False` leaves None out of the type (forms
    that cannot render a null choice, such as LangServe's playground)."""
    import annotated_types

    annotations = {}
    for name, field in QueryOptions.model_fields.items():
        metadata = [m for m in field.metadata if not isinstance(m, PublicLimit)]
        for marker in field.metadata:
            if isinstance(marker, PublicLimit) and limits is not None:
                upper = min([getattr(limits, marker.setting)] + [m.le for m in metadata
                                                                 if isinstance(m, annotated_types.Le)])
                metadata = [m for m in metadata if not isinstance(m, annotated_types.Le)]
                metadata.append(annotated_types.Le(upper))
        annotations[name] = _constrained(field.annotation, metadata, optional)
    return annotations


def _constrained(annotation: Any, metadata: list, optional: bool = True) -> Any:
    """`annotation` with `metadata`'s bounds, put on the non-None arm of an optional type: there
    they survive tools that copy a model's fields by their annotation alone (LangServe does)."""
    import types
    import typing

    arms = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in arms:
        inner = [arm for arm in arms if arm is not type(None)]
        inner_type = inner[0] if len(inner) == 1 else typing.Union[tuple(inner)]
        bounded = Annotated[(inner_type, *metadata)] if metadata else inner_type
        return typing.Optional[bounded] if optional else bounded
    return Annotated[(annotation, *metadata)] if metadata else annotation


def requested_options(config: dict | None) -> dict[str, Any]:
    """What a run asks for: its runtime context (the fields it set), then `configurable` on top."""
    configurable = (config or {}).get("configurable") or {}
    context = getattr(configurable.get(RUNTIME_KEY), "context", None)
    if isinstance(context, QueryOptions):
        requested = {name: getattr(context, name) for name in context.model_fields_set}
    elif isinstance(context, dict):
        requested = dict(context)
    else:
        requested = {}
    requested.update(configurable)
    return requested


def public_limit_errors(options: QueryOptions, settings: Settings) -> list[InvalidOption]:
    """Options above the limit a public route allows (the settings named by `PublicLimit`)."""
    errors = []
    for name, field in type(options).model_fields.items():
        for marker in field.metadata:
            if isinstance(marker, PublicLimit):
                value, limit = getattr(options, name), getattr(settings, marker.setting)
                if value is not None and value > limit:
                    errors.append(InvalidOption(
                        name, f"at most {limit} on this server (FIELDGUIDE_{marker.setting.upper()})", value))
    return errors


def check_public_limits(options: QueryOptions, settings: Settings) -> None:
    errors = public_limit_errors(options, settings)
    if errors:
        raise errors[0]


VERIFY_MODES = ("off", "flag", "drop")


def _endpoint(chat_provider: str | None) -> bool:
    return (chat_provider or "local").lower() == "openai"


# The sentence check's default, for every generator: unsupported sentences are dropped. fieldguide
# cannot tell a capable endpoint from a small one, and with unsupported sentences merely flagged the
# smallest endpoint measured (SmolLM2-135M behind llama.cpp's server) put words the docs never use
# into 92 % of its answers, against 11 % dropped (docs/BENCHMARKS.md, "Answers"); `flag` is there
# for those who would rather see every sentence, marked.
DEFAULT_VERIFY = "drop"


def default_min_support(chat_provider: str | None) -> float:
    """Support a sentence needs, per generator: strict for the small local model, whose sentences
    reuse the docs' words while getting them wrong; looser for an endpoint's model, which paraphrases."""
    return 0.6 if _endpoint(chat_provider) else 0.8


def default_prompt_context_words(chat_provider: str | None) -> int:
    """Words of context the chat model reads, per generator (0: all of it). The small local model
    spends most of its time to first token reading the prompt, and its own sentences rarely pass
    the check (the quoted evidence carries the facts), so it reads about what a four-chunk
    retriever would give it; an endpoint's model reads the whole context."""
    return 0 if _endpoint(chat_provider) else 300


OPTIONS_CACHE_SIZE = 256  # distinct option sets kept per Resources; a run's eight nodes ask for the same one


def options_key(requested: dict[str, Any]) -> tuple | None:
    """The options a run asks for as a hashable key (None when a value cannot be hashed)."""
    fields = QueryOptions.model_fields
    named = ((OPTION_ALIASES.get(key, key), value) for key, value in requested.items())
    key = tuple(sorted((name, tuple(value) if isinstance(value, list) else value)
                       for name, value in named if name in fields and value is not None))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def options_for(config: dict | None) -> QueryOptions:
    """The run's options, resolved against the settings. Every node asks, so the resolved options
    are kept per distinct request (validating and resolving them took about 0.1 ms a node); the
    object is shared and only read."""
    resources = resources_for(config)
    requested = requested_options(config)
    cache = getattr(resources, "_options", None)  # resources handed in by a caller may keep none
    key = options_key(requested) if cache is not None else None
    options = cache.get(key) if key is not None else None
    if options is None:
        options = QueryOptions.validate_overrides(requested).resolved(resources.settings)
        if key is not None:
            if len(cache) >= OPTIONS_CACHE_SIZE:
                cache.clear()
            cache[key] = options
    return options
