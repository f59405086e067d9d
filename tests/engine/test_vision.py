"""Images through the real engine: a synthetic text model + projector pair that llama.cpp's
multimodal library loads, encodes and decodes into a slot's sequence."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from engine.errors import ImageInputError, ModelLoadError
from engine.launch import LaunchSpec
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine
from tests.helpers.gguf_factory import Shape, write_llama
from tests.helpers.gguf_mmproj import VisionShape, png_bytes, write_mmproj, write_vision_pair

pytestmark = pytest.mark.slow

GREEDY = SamplingParams(temperature=0.0, max_tokens=6, loop_guard="off")
MARKER = "<__media__>"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_vision_pair(tmp_path_factory.mktemp("vision"))


@pytest.fixture(scope="module")
def engine(pair: tuple[Path, Path]) -> Iterator[Engine]:
    model, projector = pair
    eng = Engine(LaunchSpec(str(model), n_threads=1, n_ctx=1024, n_seq_max=2,
                            mmproj_path=str(projector), mmproj_offload=False))
    yield eng
    eng.close()


def ask(image: bytes, question: str = "what is this?") -> GenerationRequest:
    return GenerationRequest(messages=({"role": "user", "content": f"{MARKER}\n{question}"},),
                             images=(image,), params=GREEDY)


def test_an_image_is_encoded_into_the_prompt_and_counted(engine: Engine) -> None:
    final = engine.submit(ask(png_bytes(40, 30, seed=1))).result(60)
    assert final.finish_reason in ("stop", "length"), final.error
    m = final.metrics
    assert m.images == 1 and m.image_tokens == VisionShape().image_tokens
    text_only = len(engine.tokenize(engine.render_chat(
        [{"role": "user", "content": "\nwhat is this?"}]), add_special=False))
    assert m.prompt_tokens >= text_only + m.image_tokens
    assert m.image_encode_s is not None and m.image_encode_s > 0
    assert m.ttft_s is not None and m.ttft_s > m.image_encode_s


def test_the_image_changes_the_answer(engine: Engine) -> None:
    answers = {tuple(engine.submit(ask(png_bytes(32, 32, seed=s))).result(60).token_ids)
               for s in (2, 3, 4)}
    assert len(answers) > 1  # three different images cannot all read as the same prompt


def test_a_follow_up_about_the_same_image_reuses_its_cells(engine: Engine) -> None:
    image = png_bytes(48, 48, seed=5)
    first = engine.submit(ask(image, "first question")).result(60)
    again = engine.submit(ask(image, "second question")).result(60)
    assert again.metrics.cached_tokens > first.metrics.image_tokens
    other = engine.submit(ask(png_bytes(48, 48, seed=6), "first question")).result(60)
    # a different image shares only the text before it
    assert other.metrics.cached_tokens < first.metrics.prompt_tokens - \
        first.metrics.image_tokens


def test_an_animated_gif_is_read_as_its_first_frame_and_keyed_by_its_pixels(
        engine: Engine) -> None:
    frames = [Image.open(io.BytesIO(png_bytes(40, 40, seed=s))).convert("P")
              for s in (7, 8)]
    gif = io.BytesIO()
    frames[0].save(gif, "GIF", save_all=True, append_images=frames[1:])
    first = engine.submit(ask(gif.getvalue(), "first question")).result(60)
    assert first.finish_reason in ("stop", "length"), first.error
    png = io.BytesIO()
    frames[0].convert("RGB").save(png, "PNG")
    again = engine.submit(ask(png.getvalue(), "second question")).result(60)
    assert again.metrics.cached_tokens > first.metrics.image_tokens  # same pixels, same key


def test_undecodable_bytes_are_refused_before_queueing(engine: Engine) -> None:
    with pytest.raises(ImageInputError, match="could not be decoded"):
        engine.submit(ask(b"not an image at all"))


def test_markers_and_images_must_agree(engine: Engine) -> None:
    req = GenerationRequest(messages=({"role": "user", "content": "no marker here"},),
                            images=(png_bytes(8, 8),), params=GREEDY)
    with pytest.raises(ImageInputError, match="number of image markers"):
        engine.submit(req)


def test_a_text_only_engine_refuses_images(pair: tuple[Path, Path]) -> None:
    with Engine(LaunchSpec(str(pair[0]), n_threads=1, n_ctx=256, warm_up=False)) as eng:
        assert eng.vision_refusal is not None
        with pytest.raises(ImageInputError, match="without a vision projector"):
            eng.submit(ask(png_bytes(8, 8)))


def test_a_projector_for_another_width_fails_the_load(tmp_path: Path) -> None:
    model = write_llama(tmp_path / "m.gguf", Shape(n_embd=64))
    projector = write_mmproj(tmp_path / "mmproj-m.gguf", VisionShape(n_embd_text=96))
    with pytest.raises(ModelLoadError, match="projector"):
        Engine(LaunchSpec(str(model), n_threads=1, n_ctx=256, warm_up=False,
                          mmproj_path=str(projector)))


def test_a_gemma3_projector_decodes_its_image_with_non_causal_attention(
        tmp_path: Path) -> None:
    shape = VisionShape(kind="gemma3", image_size=64, patch_size=4)  # 16x16 patches, pool 4
    model, projector = write_vision_pair(tmp_path, shape, Shape(n_layers=2, n_embd=64),
                                         stem="tiny-gemma")
    spec = LaunchSpec(str(model), n_threads=1, n_ctx=512, warm_up=False,
                      mmproj_path=str(projector), mmproj_offload=False)
    with Engine(spec) as eng:
        assert eng.projector is not None and eng.vision_refusal is None
        first = eng.submit(ask(png_bytes(50, 50, seed=8))).result(60)
        assert first.finish_reason in ("stop", "length"), first.error
        assert first.metrics.image_tokens == shape.image_tokens == 16
        again = eng.submit(ask(png_bytes(50, 50, seed=8), "second")).result(60)
        assert again.metrics.cached_tokens > first.metrics.image_tokens


def test_a_gemma3_image_larger_than_the_micro_batch_is_refused_clearly(
        tmp_path: Path) -> None:
    shape = VisionShape(kind="gemma3", image_size=64, patch_size=4)  # 16 image tokens
    model, projector = write_vision_pair(tmp_path, shape, Shape(n_layers=2, n_embd=64),
                                         stem="tiny-gemma")
    spec = LaunchSpec(str(model), n_threads=1, n_ctx=512, n_batch=8, n_ubatch=8,
                      warm_up=False, mmproj_path=str(projector), mmproj_offload=False)
    with Engine(spec) as eng, pytest.raises(ImageInputError, match="micro-batch"):
        eng.submit(ask(png_bytes(20, 20)))


def test_the_projector_memory_model_matches_llama_cpps_clip_loader(tmp_path: Path) -> None:
    from bench import vision as bench

    rows = bench.projector_rows(tmp_path)
    assert {r.name for r in rows} >= {"vit-l14-336", "gemma3-896"}
    assert all(r.measured > 0 for r in rows)
    assert not bench.memory_misses(rows), bench.memory_misses(rows)


def test_images_are_refused_beside_a_draft_model(pair: tuple[Path, Path]) -> None:
    model, projector = pair
    spec = LaunchSpec(str(model), n_threads=1, n_ctx=256, warm_up=False, spec_mode="draft",
                      draft_model_path=str(model), mmproj_path=str(projector),
                      mmproj_offload=False)
    with Engine(spec) as eng:
        assert eng.vision_refusal is not None and "draft" in eng.vision_refusal
        with pytest.raises(ImageInputError, match="drafter"):
            eng.submit(ask(png_bytes(8, 8)))
