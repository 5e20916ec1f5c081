"""prompt: the messages the generator reads.

System prompt for the intent (`prompts/*.md`), the last turns of the conversation
(so follow-up questions make sense), then one user message with the context fenced
as data and the question. Nothing is built when the turn abstains.

The model reads at most `prompt_context_words` of the context (`prompt_blocks`): whole
excerpts, the ones the quoted evidence comes from first, then the others in context order,
each under its own citation number. The reader already has the evidence; the rest of the
context stays in the state, for the sentence check and the citations.
"""
from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from graph.options import options_for
from graph.state import question_of
from graph.timing import timed
from ingest.dialects import reading_of
from prompts.loader import system_prompt, user_message

HISTORY_MESSAGES = 4  # two earlier question/answer pairs


def earlier_turns(messages: list, question: str) -> list:
    """Earlier questions and answers, without the question of this turn."""
    turns = [m for m in messages or [] if isinstance(m, (HumanMessage, AIMessage))]
    if turns and isinstance(turns[-1], HumanMessage) and turns[-1].content == question:
        turns = turns[:-1]
    return [type(m)(content=m.content) for m in turns[-HISTORY_MESSAGES:]]


def prompt_blocks(blocks: list[dict], evidence: list[dict], max_words: int) -> list[int]:
    """Indexes (in context order) of the blocks the model reads: the blocks the evidence quotes
    first, then the others in context order, each whole, while they fit in `max_words` (0: all).
    The first block chosen is always read, whatever its length."""
    if not max_words or not blocks:
        return list(range(len(blocks)))
    quoted = [n - 1 for n in dict.fromkeys(int(unit["n"]) for unit in evidence) if 0 < n <= len(blocks)]
    order = sorted(quoted) + [i for i in range(len(blocks)) if i not in quoted]
    chosen: list[int] = []
    words = 0
    for index in order:
        size = len(reading_of(blocks[index]).split())
        if chosen and words + size > max_words:
            continue
        chosen.append(index)
        words += size
    return sorted(chosen)


@timed("prompt")
def prompt(state: dict, config: RunnableConfig = None) -> dict:
    if state.get("abstain"):
        return {"prompt_messages": []}
    blocks = state.get("context") or []
    read = prompt_blocks(blocks, state.get("evidence") or [], options_for(config).prompt_context_words)
    return {"prompt_messages": [
        SystemMessage(content=system_prompt(state.get("intent", "conceptual"))),
        *earlier_turns(state.get("messages") or [], state["question"]),
        HumanMessage(content=user_message(question_of(state), [blocks[i] for i in read], [i + 1 for i in read])),
    ]}
