"""What the user asks of a plan: the ``Request`` (context, slots, task, overrides).

Every field named after a llama.cpp option (``n_gpu_layers``, ``n_cpu_moe``,
``tensor_split``, ``kv_type``, ``spec``) is a *pin*: when set, the planner honours it
exactly and prices it, and warns when its own choice would have been faster.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from planner.profile import ModelProfile
from planner.projector import ProjectorProfile


@dataclass(frozen=True)
class RunSample:
    """One measured run, as the fit sees it.

    Attributes:
        regime: :func:`planner.machine_fit.regime_of` the plan the run was made with.
        model: the model's identity (name and file size).
        decode_ratio: measured / raw predicted decode t/s (None: not measured).
        prefill_ratio: measured / raw predicted prefill t/s (None: not measured).
    """

    regime: str
    model: str
    decode_ratio: float | None = None
    prefill_ratio: float | None = None


class TaskKind(StrEnum):
    """What the model is used for: drives speculation and low-bit warnings."""

    CHAT = "chat"
    CODE = "code"
    AGENT = "agent"
    MATH = "math"
    CREATIVE = "creative"


class Priority(StrEnum):
    """What the planner favours when it must trade."""

    SPEED = "speed"
    CONTEXT = "context"
    QUALITY = "quality"


class Role(StrEnum):
    """A GPU's role in a plan."""

    MAIN = "main"
    HELPER = "helper"
    OFF = "off"


class SpecMode(StrEnum):
    """Speculative decoding modes llama.cpp offers."""

    OFF = "off"
    NGRAM = "ngram"
    DRAFT = "draft"
    MTP = "mtp"
    DFLASH = "dflash"  # a DFlash block-diffusion drafter (``draft_profile``)


KV_TYPES: tuple[str, ...] = ("f16", "q8_0", "q4_0")


@dataclass(frozen=True)
class SpecRequest:
    """A pinned speculation mode; ``draft_tokens`` None lets the planner choose the length.

    ``acceptance`` (per drafted token, 0..1) replaces the task's default when the user has
    measured it on their own prompts.
    """

    mode: SpecMode
    draft_tokens: int | None = None
    acceptance: float | None = None

    @staticmethod
    def parse(text: str) -> SpecRequest:
        """Parse ``off|ngram|draft|mtp|dflash[:N]`` as the CLI takes it.

        Raises:
            ValueError: an unknown mode or a bad draft length.
        """
        mode_text, _, n_text = text.strip().lower().partition(":")
        mode = SpecMode(mode_text)
        n = int(n_text) if n_text else None
        if n is not None and not 0 <= n <= 64:
            raise ValueError(f"draft length must be 0..64, got {n}")
        return SpecRequest(mode=mode, draft_tokens=n)


@dataclass(frozen=True)
class Request:
    """What to plan for. All sizes in tokens; None means "the planner chooses".

    Attributes:
        context: context of each sequence (a user's "32K per chat").
        parallel: sequences served at once; the KV cache holds ``context x parallel``.
        task: chat / code / agent / math / creative.
        priority: speed / context / quality.
        depth: tokens already in the context when decoding (the prediction is for it).
        prompt_tokens: prompt length the TTFT is predicted for.
        n_gpu_layers: llama.cpp ``-ngl`` (layers counted as llama.cpp counts them: the
            output layer is the last one, so ``n_layers + 1`` is "everything").
        n_cpu_moe: routed experts of the first N layers stay in RAM.
        tensor_split: share of the GPU layers per GPU, one number per GPU.
        kv_type: f16 / q8_0 / q4_0 for both K and V.
        flash_attn: flash attention pinned on or off (None: the planner's choice).
        n_ubatch: llama.cpp ``-ub``, the micro-batch a prompt is computed in (None: the
            planner's choice; it grows it when weights in RAM cross PCIe per batch).
        spec: a pinned speculation mode.
        draft_profile: the draft model's (or DFlash drafter's) profile when
            ``--draft-model`` is given.
        draft_path: where that draft model is (passed through to the engine).
        roles: one role per GPU, in inventory order.
        gpu_order: GPU indices in the order their layer ranges follow (main first).
        rope_scaling: the user accepts a context beyond the training context.
        host_reserve_bytes: RAM left free for the desktop.
        advise: compute what-if advice (costs a few more plans).
        machine_runs: this machine's measured runs; the prediction is corrected by them
            (:mod:`planner.machine_fit`).
        projector: a vision projector loaded beside the model (:mod:`planner.vision_plan`
            holds its memory back before placing the model).
        projector_offload: the projector goes to the main GPU (False: it stays in RAM).
        embedding_context: the engine's embedding context is planned too
            (:mod:`planner.embedding_plan`): True beside the chat context (``serve
            --embeddings``), None when the model is an embedding model (it has that
            context only), False never.
    """

    context: int | None = None
    parallel: int = 1
    task: TaskKind = TaskKind.CHAT
    priority: Priority = Priority.SPEED
    depth: int = 0
    prompt_tokens: int = 1024
    n_gpu_layers: int | None = None
    n_cpu_moe: int | None = None
    tensor_split: tuple[float, ...] | None = None
    kv_type: str | None = None
    flash_attn: bool | None = None
    n_ubatch: int | None = None
    spec: SpecRequest | None = None
    draft_profile: ModelProfile | None = None
    draft_path: str | None = None
    roles: tuple[Role, ...] | None = None
    gpu_order: tuple[int, ...] | None = None
    rope_scaling: bool = False
    host_reserve_bytes: int = 5 * 1000**3
    advise: bool = True
    machine_runs: tuple[RunSample, ...] = ()
    projector: ProjectorProfile | None = None
    projector_offload: bool = True
    embedding_context: bool | None = None

    def __post_init__(self) -> None:
        if self.parallel < 1:
            raise ValueError("parallel must be >= 1")
        if self.context is not None and self.context < 1:
            raise ValueError("context must be >= 1")
        if self.kv_type is not None and self.kv_type not in KV_TYPES:
            raise ValueError(f"kv_type must be one of {', '.join(KV_TYPES)}")
        if self.depth < 0 or self.prompt_tokens < 0:
            raise ValueError("depth and prompt_tokens must be >= 0")
        if self.n_ubatch is not None and self.n_ubatch < 1:
            raise ValueError("n_ubatch must be >= 1")

    @property
    def pins_placement(self) -> bool:
        """True when the user pinned where layers go (ngl, n_cpu_moe or tensor_split)."""
        return (self.n_gpu_layers is not None or self.n_cpu_moe is not None
                or self.tensor_split is not None)
