"""Reason and warning codes of a Plan.

The planner speaks in codes and numbers; the GUI and the CLI turn them into sentences.
Codes are stable strings (scripts and translations depend on them): add new ones, never
rename or remove.
"""

from __future__ import annotations

from enum import StrEnum


class Code(StrEnum):
    """Every reason, warning, bottleneck and advice code the planner emits."""

    # -- fit ----------------------------------------------------------------------------
    FITS = "fits"                                   # everything placed in VRAM / RAM
    FITS_WITH_DISK_STREAMING = "fits_with_disk_streaming"
    DOES_NOT_FIT = "does_not_fit"                   # not even mmapped from disk
    MODEL_LARGER_THAN_MEMORY = "model_larger_than_memory"
    CONTEXT_DOES_NOT_FIT = "context_does_not_fit"   # the weights fit, the KV cache does not
    NO_DISK = "no_disk"                             # nothing to stream from

    # -- roles --------------------------------------------------------------------------
    ROLE_MAIN_LARGEST = "main_largest"              # largest free VRAM x bandwidth
    ROLE_MAIN_USER = "main_user"
    ROLE_HELPER_FASTER = "helper_faster"            # priced: the whole is faster with it
    ROLE_HELPER_NEEDED = "helper_needed_for_fit"    # needed to keep weights off RAM / disk
    ROLE_HELPER_USER = "helper_user"
    ROLE_OFF_SMALL = "off_under_8gb"
    ROLE_OFF_SLOWER = "off_would_be_slower"         # priced: its share costs more than it adds
    ROLE_OFF_USER = "off_user"
    ROLE_OFF_NOT_NEEDED = "off_not_needed"          # everything fits on the faster GPUs
    ROLE_DISPLAY_RESERVE = "display_reserve"        # drives a display: larger reserve
    ROLE_OFF_SAME_HOST = "off_same_host"            # a worker on this machine: no gain

    # -- RPC workers (devices behind a network link) -----------------------------------
    SAME_HOST = "same_host"                         # worker shares this machine's cores
    REMOTE_LAYERS = "remote_layers"                 # layers on workers, with link costs
    REMOTE_NEEDED_FOR_FIT = "remote_needed_for_fit"  # (kept: the note's "why" says this)
    REMOTE_FASTER = "remote_faster"
    REMOTE_NOT_USED = "remote_not_used"             # local devices alone are as fast

    # -- placement ----------------------------------------------------------------------
    ALL_ON_GPU = "all_on_gpu"
    EXPERTS_TO_RAM = "experts_to_ram"               # routed experts of some layers in RAM
    LAYERS_TO_RAM = "layers_to_ram"                 # whole layers on the CPU (dense model)
    WEIGHTS_ON_DISK = "weights_on_disk"             # what RAM cannot hold stays mmapped
    CPU_ONLY = "cpu_only"
    UNIFIED_MEMORY = "unified_memory"
    USER_PLACEMENT = "user_placement"               # ngl / n_cpu_moe / tensor_split pinned

    # -- context and KV -----------------------------------------------------------------
    CONTEXT_USER = "context_user"
    CONTEXT_FROM_BUDGET = "context_from_budget"     # the largest that fits what is left
    CONTEXT_TRAIN_LIMIT = "context_train_limit"     # capped by the training context
    CONTEXT_BELOW_32K = "context_below_32k"
    CONTEXT_ABOVE_TRAIN = "context_above_train"     # rope scaling requested
    CONTEXT_CAPPED_TO_TRAIN = "context_capped_to_train"
    KV_F16 = "kv_f16"
    KV_Q8_0_KEEPS_GPU = "kv_q8_0_keeps_weights_on_gpu"
    KV_Q8_0_BUYS_CONTEXT = "kv_q8_0_buys_context"
    KV_Q4_0_KEEPS_GPU = "kv_q4_0_keeps_weights_on_gpu"
    KV_Q4_0_BUYS_CONTEXT = "kv_q4_0_buys_context"
    KV_USER = "kv_user"
    KV_TYPE_NOT_WHOLE_BLOCKS = "kv_type_not_whole_blocks"  # pinned quantized KV whose blocks
    #   do not divide the heads: llama.cpp refuses the context (a does-not-fit reason)
    KV_IN_RAM = "kv_in_ram"                         # KV of CPU layers: ~20x cost per byte
    FLASH_OFF_CPU = "flash_attn_off_cpu"            # CPU-only, f16 KV: decodes faster without
    FLASH_USER = "flash_attn_user"                  # pinned on
    FLASH_USER_OFF = "flash_attn_user_off"          # pinned off
    FLASH_NEEDED_BY_KV = "flash_attn_needed_by_kv"  # pinned off, but a quantized V needs it

    # -- quantization -------------------------------------------------------------------
    QUANT_ONLY_FILE = "quant_only_file"
    QUANT_BEST_THAT_FITS = "quant_best_that_fits"
    QUANT_FASTEST_USABLE = "quant_fastest_usable"   # none reached a usable speed
    LOW_BITS_FOR_TASK = "low_bits_for_task"         # <= 3 bits for agent / code work
    LOW_BITS_MOE_MTP_LOOPS = "low_bits_moe_mtp_loops"  # MoE + MTP + <= 3 bits: loops

    # -- speculation --------------------------------------------------------------------
    SPEC_OFF_CREATIVE = "spec_off_creative"
    SPEC_OFF_PARALLEL = "spec_off_parallel"
    SPEC_OFF_NO_GAIN = "spec_off_no_gain"
    SPEC_OFF_NO_ROOM = "spec_off_no_room"           # MTP / draft memory does not fit on GPU
    SPEC_OFF_TASK = "spec_off_task"
    SPEC_MTP = "spec_mtp"
    SPEC_NGRAM = "spec_ngram"
    SPEC_DRAFT = "spec_draft"
    SPEC_USER = "spec_user"
    SPEC_MTP_UNAVAILABLE = "spec_mtp_unavailable"   # asked for MTP, the model has no head
    SPEC_DRAFT_MISSING = "spec_draft_missing"       # asked for a draft, no draft model

    # -- user overrides -----------------------------------------------------------------
    OVERRIDE_SLOWER = "override_slower"             # the planner's choice would be faster
    OVERRIDE_DOES_NOT_FIT = "override_does_not_fit"  # pinned placement exceeds a device
    OVERRIDE_IGNORED = "override_ignored"           # makes no sense here (e.g. no GPU)

    # -- speed --------------------------------------------------------------------------
    SLOW_DECODE = "slow_decode"                     # below a usable decode speed
    PARALLEL_KV = "parallel_kv"                     # slots multiply the KV cache
    SOFTWARE_DEVICE_SPEED = "software_device_speed"  # layers on a device computing on the
    #   CPU (lavapipe): the predicted speeds are nominal, not this machine's

    # -- bottleneck ---------------------------------------------------------------------
    CAPACITY_BOUND = "capacity_bound"               # spilling to disk
    BANDWIDTH_BOUND = "bandwidth_bound"             # reading weights from RAM / VRAM
    COMPUTE_BOUND = "compute_bound"
    OVERHEAD_BOUND = "overhead_bound"               # per-token fixed costs dominate
    TRANSFER_BOUND = "transfer_bound"               # hops between devices dominate

    # -- advice -------------------------------------------------------------------------
    ADVICE_SMALLER_QUANT = "advice_smaller_quant"
    ADVICE_MOE_MODEL = "advice_moe_model"
    ADVICE_SHORTER_CONTEXT = "advice_shorter_context"
    ADVICE_KV_Q8_0 = "advice_kv_q8_0"
    ADVICE_MORE_RAM = "advice_more_ram"
    ADVICE_FASTER_RAM = "advice_faster_ram"
    ADVICE_BIGGER_GPU = "advice_bigger_gpu"
    ADVICE_SECOND_GPU = "advice_second_gpu"
    ADVICE_NO_CHANGE_NEEDED = "advice_no_change_needed"
    ADVICE_SMALLER_HOST_RESERVE = "advice_smaller_host_reserve"  # the RAM kept free for
    #   other programs leaves the model too little (up to all of it)
