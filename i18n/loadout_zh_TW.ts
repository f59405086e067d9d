<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_TW">
<context>
    <name>ChatPage</name>
    <message>
        <source>Chat</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Load a model from the Plan page to chat with it here. Until then, `loadout chat MODEL` chats in a terminal with the same engine.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>Codes</name>
    <message>
        <source>Main</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Helper</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Off</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>NVMe SSD</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>SSD</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Hard disk</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Unknown</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Chat</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Code</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Agent / tools</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Math</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Creative writing</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Automatic</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>N-gram</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Draft model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>MTP heads</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>f16 (full)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>q8_0 (half)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>q4_0 (quarter)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Weights</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Experts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>KV cache</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Compute buffers</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Reserve</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Free</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Over capacity</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>RAM</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Disk</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Everything fits in GPU memory and RAM.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>It fits only by reading part of the model from disk while it runs: expect a big slowdown.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>This model does not fit on this machine, not even read from disk.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The model is larger than all GPU memory and RAM together.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The weights fit, but the KV cache for this context does not.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>There is no disk to read the rest of the model from.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>It has the most free VRAM times bandwidth, so it holds the output layer and most layers.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>You chose it as the main GPU.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Sharing layers with it makes the whole faster.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>It is needed to keep weights out of RAM and off the disk.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>You chose it as a helper.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>It has less than 8 GB, which costs more in transfers than it adds.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Giving it a share would make the whole slower.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>You switched it off.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Everything fits on the faster GPUs without it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>It drives a display, so more memory is kept free on it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>All layers are on the GPU.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The routed experts of some layers stay in RAM (the cheapest bytes to move).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Some whole layers run on the CPU from RAM.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>What RAM cannot hold stays on disk and is read from there: speed falls off a cliff.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No usable GPU: the model runs on the CPU from RAM.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The GPU shares memory with the CPU (unified memory).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The layer placement is the one you set.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The context is the one you asked for.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The context is the largest that fits in the memory left after the weights.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The context is capped at the length the model was trained for.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The context is below 32K tokens because memory is short.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The context is longer than the model was trained for (rope scaling).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The context you asked for was capped at the training length.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The KV cache is kept at full precision (f16).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The KV cache is q8_0 so that the weights stay on the GPU.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The KV cache is q8_0 to make room for more context.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The KV cache is q4_0 so that the weights stay on the GPU.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The KV cache is q4_0 to make room for more context.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The KV cache type is the one you chose.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Part of the KV cache is in RAM, which costs far more per byte than weights there.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>This is the only quantization available.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>This is the best quality that fits without reading from disk.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No quantization reaches a usable speed; this is the fastest.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>At 3 bits or less, quality drops sharply for code and agent work.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Few bits with a MoE model and MTP on is known to cause endless loops.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Speculation is off: it does not help creative writing.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Speculation is off: its gain vanishes with several parallel slots.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Speculation is off: it would not be faster here.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Speculation is off: its memory does not fit on the GPU.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Speculation is off for this kind of task.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The model&apos;s MTP heads draft tokens ahead.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>N-gram lookup drafts tokens ahead.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>A small draft model drafts tokens ahead.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Speculation is set the way you chose.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>MTP was asked for, but this model has no MTP heads.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>A draft model was asked for, but none is set.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Your setting is slower than the planner&apos;s choice.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Your placement does not fit on a device.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Your setting does not apply here and was ignored.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Decoding will be slow for interactive use.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Each parallel slot needs its own KV cache.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Bottleneck: capacity. Part of the model is read from disk.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Bottleneck: memory bandwidth. Each token reads every active weight.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Bottleneck: compute.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Bottleneck: fixed per-token costs.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Bottleneck: transfers between devices.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Use a smaller quantization.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Use a mixture-of-experts model: it reads only the active experts per token.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Ask for a shorter context.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Use a q8_0 KV cache.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Add RAM, so nothing is read from disk.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Use faster RAM (more channels or a higher clock).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Use a GPU with more memory.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Add a second GPU.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Nothing to change: this is as fast as this machine gets.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>ErrorReporter</name>
    <message>
        <source>The model file could not be found: {detail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>This file is not a GGUF model Loadout can read: {detail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Loadout cannot plan this model yet: {detail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The rig file is not valid: {detail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Out of memory: {detail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{detail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Permission denied: {detail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>A file could not be read or written: {detail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Something went wrong ({kind}): {detail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Loadout: something went wrong</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Details are in the log file.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>GpuRoles</name>
    <message>
        <source>Let the planner choose</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No GPU: everything runs on the CPU.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Earlier in the order (holds the first layers)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Later in the order</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>HomePage</name>
    <message>
        <source>This machine</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Detect again</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>What if…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Plan for an edited machine: add or remove GPUs, change RAM, open or save rig files</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Memory and CPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Disks</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No GPU found: models run on the CPU from RAM.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>VRAM free / total</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Bandwidth</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Role</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Why</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Kind</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Read speed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Detecting hardware: CPU and RAM…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Detecting hardware: GPUs…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Detecting hardware: engine devices…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Measuring RAM bandwidth…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Measuring GPU bandwidth…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Measuring disk read speed…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Detection finished.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Detecting hardware…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Hardware not detected yet.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Detected.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>pick a model to see</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>RAM {available} available of {total} · {bandwidth} · {cpu}, {cores} cores / {threads} threads</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>Loadout</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Home</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Models</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Plan</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Chat</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Server</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Engine: not loaded</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Model: {name}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>none</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Decode: — t/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>VRAM in use: {used} / {total}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>VRAM: none</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>RAM in use: {used} / {total}</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>MemoryMap</name>
    <message>
        <source>{kind}: {size} ({share:.0f}% of {capacity})</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Layers {spans}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{used} of {capacity}</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>ModelsPage</name>
    <message>
        <source>Models</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Pick a model to plan it. Folders to search are set in Settings.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Open a .gguf file…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Plan this model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Demo model (SmolLM2 135M Instruct, {size})</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Selected: {name}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No model selected.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Open a GGUF model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GGUF models (*.gguf)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>PlanPage</name>
    <message>
        <source>Pick a model on the Models page to see its plan.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Waiting for this machine&apos;s hardware…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Fits. Context {context} per sequence × {parallel}, KV {kv}, speculation {spec}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Does not fit as asked.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{advice} → decode {tps} t/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No advice for this plan.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Auto</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Reading the model…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Plan: {name}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Plan</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>For: what-if rig</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>For: this machine</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>What if…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Back to this machine</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Load</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Loading from the app comes in a later version; use `loadout chat` or `loadout serve` meanwhile.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Request</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Context</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Parallel slots</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>KV cache type</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Speculation</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Task</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPU roles and order</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Predicted speed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>decode t/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>prefill t/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>time to first token</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Where every byte goes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Warnings and reasons</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>What would make this faster</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>ServerPage</name>
    <message>
        <source>Server</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Load a model from the Plan page to serve it with an OpenAI-compatible API. Until then, `loadout serve MODEL` starts the same server from a terminal.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>SettingsPage</name>
    <message>
        <source>Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Model folders</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Language</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Theme</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Kept free on each GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Kept free in RAM</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Default task</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Log folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Add folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Remove</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Same as the system</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Light</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Dark</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Folder with GGUF models</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>WhatIfDialog</name>
    <message>
        <source>What if: edit the machine</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Add GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Remove selected</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>RAM</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>RAM bandwidth</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Open rig file…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Save rig file…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Back to this machine</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Open a rig file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Rig files (*.json)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Save the rig file</source>
        <translation type="unfinished"></translation>
    </message>
</context>
</TS>
