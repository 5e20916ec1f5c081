"""prompt: the messages the generator reads.

System prompt for the intent (`prompts/*.md`), the last turns of the conversation
(so follow-up questions make sense), then one user message with the context fenced
as data and the question. Nothing is built when the turn abstains.
"""
from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from graph.runtime import Stopwatch, question_of, with_timing
from prompts.loader import system_prompt, user_message

HISTORY_MESSAGES = 4  # two earlier question/answer pairs


def earlier_turns(messages: list, question: str) -> list:
    """Earlier questions and answers, without the question of this turn."""
    turns = [m for m in messages or [] if isinstance(m, (HumanMessage, AIMessage))]
    if turns and isinstance(turns[-1], HumanMessage) and turns[-1].content == question:
        turns = turns[:-1]
    return [type(m)(content=m.content) for m in turns[-HISTORY_MESSAGES:]]


def prompt(state: dict, config: RunnableConfig = None) -> dict:
    with Stopwatch() as sw:
        if state.get("abstain"):
            messages = []
        else:
            messages = [
                SystemMessage(content=system_prompt(state.get("intent", "conceptual"))),
                *earlier_turns(state.get("messages") or [], state["question"]),
                HumanMessage(content=user_message(question_of(state), state.get("context") or [])),
            ]
    return {"prompt_messages": messages, "timings_ms": with_timing(state, "prompt", sw.ms)}
