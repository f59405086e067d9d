"""Images on ``/v1/responses`` and ``/v1/messages`` with the real ``openai`` and
``anthropic`` clients, against the synthetic vision pair of ``test_server_vision``.

Responses documents are validated against the OpenAI schemas, Messages documents and
events against the ``anthropic`` SDK's own types in strict mode.
"""

from __future__ import annotations

import base64
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import Message, MessageTokensCount

from tests.engine.anthropic_stream import raw_events
from tests.engine.responses_schemas import validate_openai
from tests.engine.server_fixtures import ServerProcess
from tests.engine.test_server_vision import data_url, images_site, vision_server  # noqa: F401
from tests.helpers.gguf_mmproj import png_bytes

pytestmark = pytest.mark.slow

IMAGE_TOKENS = 16  # the synthetic projector's tokens per image


def image_block(image: bytes, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type,
                                        "data": base64.b64encode(image).decode()}}


@pytest.fixture(scope="module")
def gpt(vision_server: ServerProcess) -> openai.OpenAI:  # noqa: F811
    return openai.OpenAI(base_url=vision_server.base_url, api_key="x", max_retries=0,
                         timeout=60)


@pytest.fixture(scope="module")
def claude(vision_server: ServerProcess) -> anthropic.Anthropic:  # noqa: F811
    return anthropic.Anthropic(base_url=vision_server.url, api_key="x", max_retries=0,
                               timeout=60)


def test_a_response_about_an_input_image(vision_server: ServerProcess,  # noqa: F811
                                         gpt: openai.OpenAI) -> None:
    raw = gpt.responses.with_raw_response.create(
        model=vision_server.model, max_output_tokens=3, temperature=0,
        input=[{"role": "user", "content": [
            {"type": "input_text", "text": "What is in this picture?"},
            {"type": "input_image", "image_url": data_url(png_bytes(32, 32, seed=11)),
             "detail": "low"}]}])
    doc = raw.http_response.json()
    validate_openai(doc, "Response")
    assert doc["timings"]["images"] == 1 and doc["timings"]["image_tokens"] == IMAGE_TOKENS
    assert doc["usage"]["input_tokens"] > IMAGE_TOKENS
    # the stored conversation keeps the image: a follow-up reads it again, from the cache
    follow = gpt.responses.create(model=vision_server.model, max_output_tokens=2,
                                  temperature=0, store=False, previous_response_id=doc["id"],
                                  input="And its colour?")
    assert follow.model_dump()["timings"]["images"] == 1
    assert follow.usage is not None
    assert follow.usage.input_tokens_details.cached_tokens > IMAGE_TOKENS


def test_a_message_about_an_image_its_count_and_its_stream(
        vision_server: ServerProcess, claude: anthropic.Anthropic) -> None:  # noqa: F811
    messages: Any = [{"role": "user", "content": [
        image_block(png_bytes(24, 24, seed=12)), {"type": "text", "text": "Describe it."}]}]
    count = claude.messages.count_tokens(model=vision_server.model, messages=messages)
    MessageTokensCount.model_validate(count.model_dump(), strict=True)
    answer = claude.messages.create(model=vision_server.model, max_tokens=3,
                                    messages=messages, extra_body={"temperature": 0})
    doc = answer.model_dump(mode="json", exclude_unset=True)
    Message.model_validate(doc, strict=True)
    assert doc["timings"]["images"] == 1
    # the count is the engine's own prompt, the image's positions included
    assert count.input_tokens == doc["timings"]["prompt_tokens"] > IMAGE_TOKENS

    with claude.messages.stream(model=vision_server.model, max_tokens=3, messages=messages,
                                extra_body={"temperature": 0}) as stream:
        raw, final = raw_events(stream)
    assert raw[-2]["timings"]["images"] == 1
    texts = [b.text for b in final.content if b.type == "text"]
    assert texts == [b["text"] for b in doc["content"]]  # greedy: the same answer


def test_an_image_in_a_tool_result_is_read(vision_server: ServerProcess,  # noqa: F811
                                           claude: anthropic.Anthropic) -> None:
    tool: Any = {"name": "camera", "description": "Takes a picture",
                 "input_schema": {"type": "object", "properties": {}}}
    answer = claude.messages.with_raw_response.create(
        model=vision_server.model, max_tokens=2, tools=[tool], messages=[
            {"role": "user", "content": "Take a picture."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                                               "name": "camera", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": [image_block(png_bytes(16, 16, seed=13))]},
                {"type": "text", "text": "What do you see?"}]}])
    assert answer.http_response.json()["timings"]["images"] == 1


def test_bad_images_are_400_in_each_apis_shape(
        vision_server: ServerProcess, gpt: openai.OpenAI,  # noqa: F811
        claude: anthropic.Anthropic, images_site: str) -> None:  # noqa: F811
    with pytest.raises(openai.BadRequestError) as info:
        gpt.responses.create(model=vision_server.model, max_output_tokens=2, input=[
            {"role": "user", "content": [{"type": "input_image", "detail": "auto",
                                          "image_url": images_site + "/big.png"}]}])
    assert info.value.code == "image_too_large"
    assert info.value.body["param"] == "input[0].content[0].image_url"  # type: ignore[index]
    for block, says in (
            (image_block(png_bytes(8, 8), "image/jpeg"), "but the data is a PNG image"),
            ({"type": "image", "source": {"type": "url", "url": images_site + "/slow.png"}},
             "could not be fetched")):
        with pytest.raises(anthropic.BadRequestError) as err:
            claude.messages.create(model=vision_server.model, max_tokens=2, messages=[
                {"role": "user", "content": [block, {"type": "text", "text": "?"}]}])
        anthropic.types.ErrorResponse.model_validate(err.value.body, strict=True)
        assert says in err.value.message
    assert vision_server.get_json("/health") == {"status": "ok"}
