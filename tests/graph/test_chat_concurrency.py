"""Concurrent generations on the local model must queue, never deadlock.

The model serves one generation at a time. A lock held across `yield` deadlocks once every
thread of the event loop's default executor waits for it while the holder needs one of
those threads for its next chunk; here the executor has two threads and four turns ask.
"""
import asyncio
import concurrent.futures

import pytest
from langchain_core.messages import HumanMessage

from fieldguide.chat import LlamaCppChatModel, default_gguf_path

pytestmark = pytest.mark.models


def test_concurrent_streams_all_finish():
    model = LlamaCppChatModel(model_path=default_gguf_path(), n_ctx=512, max_tokens=8)

    async def one(index: int) -> str:
        return "".join([chunk.content async for chunk in model.astream([HumanMessage(f"Say {index}")])])

    async def main() -> list[str]:
        asyncio.get_running_loop().set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=2))
        return await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(4))), timeout=180)

    answers = asyncio.run(main())
    assert len(answers) == 4 and all(answers)


def test_a_stream_left_early_frees_the_model():
    model = LlamaCppChatModel(model_path=default_gguf_path(), n_ctx=512, max_tokens=64)
    stream = model.stream([HumanMessage("Tell a long story")])
    next(stream)
    stream.close()  # the consumer goes away mid-answer
    assert "".join(chunk.content for chunk in model.stream([HumanMessage("Say hi")], max_tokens=4))
