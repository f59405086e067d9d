"""``loadout serve --models DIR`` with a vision model and ``--embeddings``: the router pairs
a model with the projector beside it (planned, loaded, its images answered), and a chat
model of the folder embeds. Real HTTP, the real ``openai`` client; synthetic GGUFs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from engine.server.model_catalog import folder_models
from engine.server.router_plan import RouterPlanner, need_of
from planner.request import Request
from tests.engine.server_fixtures import ServerProcess, validate
from tests.engine.test_server_embeddings import validate as validate_embeddings
from tests.engine.test_server_vision import ask, data_url
from tests.helpers.gguf_factory import Shape, write_llama
from tests.helpers.gguf_mmproj import png_bytes, write_vision_pair
from tests.planner.rigs import RTX_4060, rig

VISION, TEXT = "tiny-vision-F16", "smol"
SMOL_SHAPE = Shape(n_embd=96, n_head=4, n_head_kv=2, head_dim=24)


def write_folder(folder: Path) -> Path:
    """A vision model with its projector, and a text model that pairs with none."""
    write_vision_pair(folder)
    write_llama(folder / f"{TEXT}.gguf", SMOL_SHAPE, seed=3)
    return folder


@pytest.fixture(name="models_dir", scope="module")
def models_dir_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_folder(tmp_path_factory.mktemp("router-vision-models"))


@pytest.fixture(name="router", scope="module")
def router_fixture(models_dir: Path, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[ServerProcess]:
    proc = ServerProcess("--models", str(models_dir), "--ctx", "512", "--parallel", "1",
                         "--threads", "1", "--no-warmup", "--embeddings",
                         home=tmp_path_factory.mktemp("router-vision-home")).start()
    try:
        yield proc
    finally:
        proc.stop()


def _client(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0, timeout=120)


def test_the_catalog_lists_the_vision_model_not_its_projector(models_dir: Path) -> None:
    assert sorted(m.id for m in folder_models(models_dir)) == [TEXT, VISION]


def test_the_projector_is_planned_with_its_model_and_loaded_with_it(
        models_dir: Path) -> None:
    inventory, request = rig(RTX_4060, ram_gib=32), Request(context=512, advise=False)
    model = models_dir / f"{VISION}.gguf"
    with_it = RouterPlanner(inventory, request)
    without = RouterPlanner(inventory, request, vision=False)  # --no-mmproj
    p, bare = with_it.alone(model), without.alone(model)
    assert p.projector is not None and bare.projector is None
    assert sum(need_of(p).values()) == sum(need_of(bare).values()) + p.projector.total_bytes
    assert with_it.spec(model, p).mmproj_path == str(models_dir / f"mmproj-{VISION}.gguf")
    assert without.spec(model, bare).mmproj_path is None
    text = models_dir / f"{TEXT}.gguf"
    assert with_it.alone(text).projector is None and with_it.spec(
        text, with_it.alone(text)).mmproj_path is None


def test_an_image_is_answered_by_the_vision_model(router: ServerProcess) -> None:
    resp = _client(router).chat.completions.create(
        model=VISION, messages=ask(data_url(png_bytes(32, 32, seed=1))), max_tokens=2,
        temperature=0)
    doc = resp.model_dump(exclude_unset=True)
    validate(doc, "CreateChatCompletionResponse")
    assert doc["timings"]["images"] == 1 and doc["timings"]["image_tokens"] == 16
    models = router.get_json("/v1/models")["data"]
    assert sorted(m["id"] for m in models) == [TEXT, VISION]  # the projector is no model
    vision = next(m for m in models if m["id"] == VISION)
    projector = (Path(router.args[1]) / f"mmproj-{VISION}.gguf").stat().st_size
    assert vision["state"] == "loaded"
    assert sum(vision["planned_bytes"].values()) > vision["size_bytes"] + projector


def test_a_text_model_of_the_folder_still_refuses_images(router: ServerProcess) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        _client(router).chat.completions.create(
            model=TEXT, messages=ask(data_url(png_bytes(8, 8))), max_tokens=2)
    assert info.value.code == "images_not_supported"


def test_with_embeddings_a_chat_model_of_the_folder_embeds(router: ServerProcess) -> None:
    resp = _client(router).embeddings.create(model=TEXT, input=["a cat", "a dog"])
    validate_embeddings(resp.model_dump(exclude_unset=True))
    assert [len(d.embedding) for d in resp.data] == [SMOL_SHAPE.n_embd] * 2
    assert resp.data[0].embedding != resp.data[1].embedding
    # its plan holds the embedding context beside the chat context: the bytes the router
    # counts for it (residency) are those of a plan with embeddings, more than without
    from engine.gguf_file import load_profile
    from engine.hardware import detect
    from planner.embedding_memory import EmbeddingContext, embedding_memory
    from planner.embedding_plan import placement_of

    text = Path(router.args[1]) / f"{TEXT}.gguf"
    planned = next(m for m in router.get_json("/v1/models")["data"]
                   if m["id"] == TEXT)["planned_bytes"]
    request = Request(context=512, advise=False)
    plain = RouterPlanner(detect(measure=False), request).alone(text)
    context = embedding_memory(load_profile(text), EmbeddingContext(512),
                               placement_of(plain, load_profile(text)))
    assert planned["host"] == need_of(plain)["host"] + sum(m.total_bytes for m in context)
