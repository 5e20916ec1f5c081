"""Generic example questions of each intent, for the route node's embedding prototypes.

Written for no product in particular: the nouns are the ones every application has (a setting,
a list, a report, an account, an item), so the examples carry the *form* of a screen question
(where something is, what to click, how to do a task in the app) or of a conceptual one (why,
what happens, how something works or is counted, what is possible or advisable). The route
node embeds them once with the index's embedding model and compares each question with the
two groups' mean vectors. With a multilingual embedding model the comparison also holds for
questions in other languages.

They sit below `graph.resources`, not among the nodes: the shared resources embed them once
(`Resources.intent_prototypes`), and the nodes build on the resources, never the reverse.
"""
from __future__ import annotations

import math

SCREEN_EXAMPLES = (
    "Where do I find this setting?",
    "Which button do I click to save my changes?",
    "How do I turn this option on?",
    "Where is the menu for exporting my data?",
    "How do I add a new item to the list?",
    "Which tab shows the history of my changes?",
    "How do I rename my account?",
    "Where can I see the details of an entry?",
    "How do I delete an item I no longer need?",
    "What do I click to open the settings page?",
    "How do I hide a column in the table?",
    "Where do I enter new payment details?",
    "How do I invite another person to my workspace?",
    "Can I sort the list by date?",
    "How do I filter the view so it only shows some entries?",
    "Where is the switch that turns this feature off?",
    "Which field do I fill in for the address?",
    "How do I connect another service from the settings screen?",
    "How can I reset this back to the default?",
    "Where do I upload a file?",
    "How do I pin an item to the top of the list?",
    "What does this icon next to the name do?",
    "How do I change the colour of a label?",
    "How do I set this up in the app, step by step?",
)

CONCEPTUAL_EXAMPLES = (
    "Why does this number look different from what I expected?",
    "What happens to my data if I delete my account?",
    "How is this value calculated?",
    "What is the difference between these two options?",
    "Should I use one approach or the other?",
    "Is it safe to use this with sensitive data?",
    "Why did my change not take effect?",
    "How does this work behind the scenes?",
    "What does this term mean?",
    "Does this count towards my usage limit?",
    "Will my old records be kept after I switch?",
    "Can this happen automatically, and what are its limits?",
    "What are the downsides of doing it this way?",
    "Why are some entries missing from the report?",
    "How are these two totals related?",
    "Does this comply with privacy regulations?",
    "What causes this error?",
    "Do I need to do anything else after changing this?",
    "How long is my data kept?",
    "Why don't the totals match?",
    "Is this suitable for my kind of business?",
    "What is included in my plan?",
    "Is it expected that this is not supported?",
    "Which one takes priority when both apply?",
    "It stopped working after I changed it. What am I doing wrong?",
    "Is this a bug, or is it expected behaviour?",
    "What is the most likely cause of this problem?",
)


def unit_vector(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def mean_vector(vectors: list[list[float]]) -> list[float]:
    return unit_vector([sum(column) / len(vectors) for column in zip(*vectors)])


def embed_prototypes(embeddings) -> tuple[list[float], list[float]]:
    """(screen mean, conceptual mean) of the example questions, embedded as questions."""
    vectors = [embeddings.embed_query(text) for text in (*SCREEN_EXAMPLES, *CONCEPTUAL_EXAMPLES)]
    return mean_vector(vectors[:len(SCREEN_EXAMPLES)]), mean_vector(vectors[len(SCREEN_EXAMPLES):])
