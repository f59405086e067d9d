"""Architecture names llama.cpp loads, and the few per-architecture rules of KV geometry.

Pure data mirrored from llama.cpp (``src/llama-arch.cpp`` and ``src/models/*.cpp``).
"""

from __future__ import annotations

_NAMES = """
clip llama llama4 deci falcon grok gpt2 gptj gptneox mpt baichuan starcoder refact bert
modern-bert nomic-bert nomic-bert-moe neo-bert jina-bert-v2 jina-bert-v3 eurobert bloom
stablelm qwen qwen2 qwen2moe qwen2vl qwen3 qwen3moe qwen3next qwen3vl qwen3vlmoe qwen35
qwen35moe qwen4exp phi2 phi3 phimoe plamo plamo2 plamo3 codeshell orion internlm2 minicpm
minicpm3 gemma gemma2 gemma3 gemma3n gemma4 gemma4-assistant gemma-embedding starcoder2
mamba mamba2 maple jamba falcon-h1 xverse command-r cohere2 cohere2moe dbrx olmo olmo2 olmoe
muse-glimmer openelm arctic deepseek deepseek2 deepseek2-ocr deepseek32 deepseek4 chatglm
glm4 glm4moe glm-dsa bitnet t5 t5encoder jais jais2 nemotron nemotron_h nemotron_h_moe
exaone exaone4 exaone-moe rwkv6 rwkv6qwen2 rwkv7 arwkv7 granite granitemoe granitehybrid
graniteswitch granite_swa chameleon wavtokenizer-dec plm bailingmoe bailingmoe2 bailingmoe3
dots1 dots3note arcee afmoe laguna ernie4_5 ernie4_5-moe hunyuan-moe hunyuan-dense hunyuan_vl
hy_v3 hy_v4 smollm3 gpt-oss lfm2 lfm2moe dream smallthinker llada seed_oss grovemoe apertus
minimax-01 hrm_text minimax-m2 minimax-m3 cogvlm rnd1 pangu-embedded mistral3 eagle3 dflash
mistral4 paddleocr mimo2 step35 spark2_5 llama-embed maincoder kimi-linear kimi-k3 glm5-next
talkie mellum nanbeige qwen3tts pockettts llada-moe
"""
KNOWN_ARCHITECTURES: frozenset[str] = frozenset(_NAMES.split())

# Every layer keeps a recurrent state (llm_arch_is_recurrent).
RECURRENT_ARCHS: frozenset[str] = frozenset(
    {"mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"})

# Attention and recurrent layers mixed (llm_arch_is_hybrid).
HYBRID_ARCHS: frozenset[str] = frozenset({
    "jamba", "falcon-h1", "plamo2", "granitehybrid", "lfm2", "lfm2moe", "nemotron_h",
    "nemotron_h_moe", "qwen3next", "kimi-linear", "bailingmoe3", "kimi-k3", "glm5-next",
    "qwen35", "qwen35moe", "qwen4exp", "deepseek4", "minimax-01"})

# Hybrids whose every ``full_attention_interval``-th layer (default 4) is full attention.
FULL_ATTN_INTERVAL_ARCHS: frozenset[str] = frozenset(
    {"qwen3next", "qwen35", "qwen35moe", "qwen4exp", "minimax-01"})

# arch -> (default sliding_window_pattern, dense_first): llama.cpp's load_swa_pattern calls.
# With dense_first, layer il is SWA when il % n != 0; otherwise when il % n < n - 1.
SWA_PATTERNS: dict[str, tuple[int, bool]] = {
    "afmoe": (4, False), "cohere2": (4, False), "cohere2moe": (4, True),
    "exaone-moe": (4, False), "exaone4": (4, False), "gemma-embedding": (6, False),
    "gemma2": (2, False), "gemma3": (6, False), "gemma3n": (5, False), "laguna": (4, True),
    "llama4": (4, False), "mellum": (4, False), "modern-bert": (3, True),
    "muse-glimmer": (4, False), "olmo2": (4, False), "gpt-oss": (2, False),
    "plamo3": (8, False), "smallthinker": (4, True),
}
