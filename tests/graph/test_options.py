"""The declared run options: bounds, defaults from settings, aliases, runtime context, public limits."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from fakes import config_for, make_resources

from fieldguide.settings import Settings
from graph.graph import build_graph
from graph.options import (
    RUNTIME_KEY,
    InvalidOption,
    QueryOptions,
    check_public_limits,
    option_annotations,
    public_limit_errors,
)


def test_unset_options_take_the_settings_and_set_ones_win():
    settings = Settings(max_chunks=7, rerank_min=0.3)
    options = QueryOptions.from_config({"configurable": {"rerank_min": 0.9}}, settings)
    assert options.rerank_min == 0.9
    assert options.max_chunks == 7 and options.search_k == settings.search_k
    assert options.use_reranker is True and options.hybrid_alpha == settings.hybrid_alpha


@pytest.mark.parametrize("name, value", [("max_chunks", 0), ("min_similarity", 1.5), ("temperature", -0.1),
                                         ("search_k", "many"), ("rerank_min", float("inf")),
                                         ("hybrid_alpha", 2), ("max_answer_tokens", 10**9)])
def test_a_value_out_of_bounds_is_refused_naming_the_field(name, value):
    with pytest.raises(InvalidOption) as refused:
        QueryOptions.from_config({"configurable": {name: value}}, Settings())
    assert refused.value.field == name
    assert str(refused.value).startswith(f"option {name}: ")


def test_strings_from_the_command_line_are_read_as_their_types_and_aliases_are_known():
    options = QueryOptions.validate_overrides({"k": "20", "reranker": "false", "max_chunks": "3"}, strict=True)
    assert (options.search_k, options.use_reranker, options.max_chunks) == (20, False, 3)


def test_strict_validation_refuses_a_name_that_is_no_option():
    with pytest.raises(InvalidOption, match="no such option") as refused:
        QueryOptions.validate_overrides({"max_chunk": 3}, strict=True)
    assert refused.value.field == "max_chunk"
    # A run's config carries other keys (thread_id, resources): those are not options, and pass.
    QueryOptions.validate_overrides({"thread_id": "t", "max_chunks": 3})


def test_the_runtime_context_is_honoured_and_configurable_wins_over_it():
    context = QueryOptions(max_chunks=2, use_reranker=False)
    runtime = SimpleNamespace(context=context)
    options = QueryOptions.from_config({"configurable": {RUNTIME_KEY: runtime}}, Settings(max_chunks=9))
    assert (options.max_chunks, options.use_reranker) == (2, False)
    both = QueryOptions.from_config({"configurable": {RUNTIME_KEY: runtime, "max_chunks": 5}}, Settings())
    assert both.max_chunks == 5 and both.use_reranker is False


def test_public_limits_name_the_field_and_the_setting():
    settings = Settings(public_max_chunks=5, public_max_answer_tokens=100)
    fine = QueryOptions.validate_overrides({"max_chunks": 5, "max_answer_tokens": 100})
    check_public_limits(fine, settings)
    too_much = QueryOptions.validate_overrides({"max_chunks": 6, "max_answer_tokens": 101, "search_k": 3})
    errors = public_limit_errors(too_much, settings)
    assert [e.field for e in errors] == ["max_chunks", "max_answer_tokens"]
    assert "FIELDGUIDE_PUBLIC_MAX_CHUNKS" in str(errors[0])


def test_annotations_for_a_public_route_carry_the_lower_of_both_bounds():
    from pydantic import TypeAdapter, ValidationError

    limited = option_annotations(Settings(public_max_chunks=5, public_max_search_k=10_000))
    TypeAdapter(limited["max_chunks"]).validate_python(5)
    with pytest.raises(ValidationError):
        TypeAdapter(limited["max_chunks"]).validate_python(6)
    with pytest.raises(ValidationError):  # the option's own bound stays when the setting is looser
        TypeAdapter(limited["search_k"]).validate_python(501)
    unlimited = option_annotations()
    TypeAdapter(unlimited["max_chunks"]).validate_python(1000)


def test_the_graph_declares_the_options_as_its_context_schema():
    schema = build_graph().get_context_jsonschema()
    assert set(schema["properties"]) == set(QueryOptions.model_fields)
    rerank_min = schema["properties"]["rerank_min"]
    assert "abstains" in rerank_min["description"]
    max_chunks = schema["properties"]["max_chunks"]["anyOf"][0]
    assert (max_chunks["minimum"], max_chunks["maximum"]) == (1, 1000)


def test_a_node_refuses_a_run_whose_option_is_out_of_bounds():
    from nodes.cap import cap

    with pytest.raises(InvalidOption, match="max_chunks"):
        cap({"rerank_results": []}, config_for(make_resources([]), max_chunks=-1))


def test_a_run_s_options_are_resolved_once_per_distinct_request_and_stay_per_request():
    from graph.options import OPTIONS_CACHE_SIZE, options_for

    resources = make_resources([])
    first = options_for(config_for(resources, max_chunks=3, thread_id="a"))
    assert first.max_chunks == 3
    # the same request (other keys of `configurable` aside, an alias spelled out) is the same object
    assert options_for(config_for(resources, max_chunks=3, thread_id="b")) is first
    assert options_for(config_for(resources, max_chunks=3, k=None)) is first
    other = options_for(config_for(resources, max_chunks=4))
    assert other is not first and other.max_chunks == 4 and first.max_chunks == 3
    assert options_for(config_for(resources, k=9)).search_k == 9  # the alias names search_k
    for _ in range(2):  # a refused request is refused every time, never remembered as valid
        with pytest.raises(InvalidOption, match="max_chunks"):
            options_for(config_for(resources, max_chunks=-1))
    for n in range(OPTIONS_CACHE_SIZE + 5):  # bounded: a client varying its options cannot grow it without end
        options_for(config_for(resources, search_k=n + 1))
    assert len(resources._options) <= OPTIONS_CACHE_SIZE
