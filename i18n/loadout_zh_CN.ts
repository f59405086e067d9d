<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>AttachStrip</name>
    <message>
        <source>Attach images</source>
        <translation>附加图片</translation>
    </message>
    <message>
        <source>Images ({patterns})</source>
        <translation>图片 ({patterns})</translation>
    </message>
    <message>
        <source>Not a picture: {names}</source>
        <translation>不是图片：{names}</translation>
    </message>
    <message>
        <source>Images going with the next question: {count}</source>
        <translation>随下一个问题发送的图片：{count}</translation>
    </message>
    <message>
        <source>Attach image…</source>
        <translation>附加图片…</translation>
    </message>
    <message>
        <source>Add a picture to the question (you can also paste one or drop it on the question box)</source>
        <translation>为问题添加图片（也可以粘贴图片，或将其拖放到问题框中）</translation>
    </message>
    <message>
        <source>Remove images</source>
        <translation>移除图片</translation>
    </message>
    <message>
        <source>Attach image</source>
        <translation>附加图片</translation>
    </message>
</context>
<context>
    <name>ChatPage</name>
    <message>
        <source>New conversation</source>
        <translation>新对话</translation>
    </message>
    <message>
        <source>The model is loading…</source>
        <translation>模型加载中…</translation>
    </message>
    <message>
        <source>Unloading…</source>
        <translation>正在卸载…</translation>
    </message>
    <message>
        <source>The engine stopped (see the message above).</source>
        <translation>引擎已停止（见上方消息）。</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>Conversations</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>New</source>
        <translation>新建</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>System prompt and sampling: temperature {temperature}, top-p {top_p}, longest answer {max_tokens} tokens</source>
        <translation>系统提示词与采样：温度 {temperature}，核采样 {top_p}，回答最长 {max_tokens} 个词元</translation>
    </message>
    <message>
        <source>An image</source>
        <translation>一张图片</translation>
    </message>
    <message>
        <source>{model} does not read images, so the question was not sent. Remove the pictures to ask it, or load a model that reads images (the Models page marks them).</source>
        <translation>{model} 不能读取图片，因此问题没有发送。去掉图片即可提问，或加载一个能读取图片的模型（“模型”页会标出）。</translation>
    </message>
    <message>
        <source>Last answer: {figures}</source>
        <translation>上一个回答：{figures}</translation>
    </message>
    <message>
        <source>Your question waits for the model to load; it is answered as soon as the model is ready.</source>
        <translation>你的问题正在等待模型加载；模型一就绪就会回答。</translation>
    </message>
    <message>
        <source>Your question waits: the engine stopped (see the message above). Load a model to have it answered.</source>
        <translation>你的问题正在等待：引擎已停止（见上方消息）。加载一个模型即可得到回答。</translation>
    </message>
    <message>
        <source>Your question waits, but no model is loading. {why} It is answered as soon as a model is loaded; Stop withdraws it.</source>
        <translation>你的问题在等待，但没有模型正在加载。{why}一旦有模型加载完成就会回答；点“停止”可撤回问题。</translation>
    </message>
    <message>
        <source>Preparing the model…</source>
        <translation>正在准备模型…</translation>
    </message>
    <message>
        <source>Not loaded: the reason is below</source>
        <translation>未加载：原因见下方</translation>
    </message>
    <message>
        <source>No model loaded: ask a question to load the last one, or load one from the Plan page.</source>
        <translation>未加载模型：提问即可加载上次的模型，或在“计划”页加载一个。</translation>
    </message>
    <message>
        <source>Ready: {model} answers</source>
        <translation>就绪：由 {model} 回答</translation>
    </message>
    <message>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <source>Top-p</source>
        <translation>核采样 (top-p)</translation>
    </message>
    <message>
        <source>Longest answer (tokens)</source>
        <translation>最长回答（token 数）</translation>
    </message>
    <message>
        <source>Ask something… (Ctrl+Enter sends)</source>
        <translation>输入问题…（Ctrl+Enter 发送）</translation>
    </message>
    <message>
        <source>Question</source>
        <translation>问题</translation>
    </message>
    <message>
        <source>Conversation</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>Live decode speed of this answer</source>
        <translation>本次回答的实时解码速度</translation>
    </message>
    <message>
        <source>decode t/s, this answer</source>
        <translation>本次回答的解码 t/s</translation>
    </message>
    <message>
        <source>This answer&apos;s decode t/s while it streams, as the engine measures it (other requests to the server are not counted)</source>
        <translation>本次回答流式输出时的解码 t/s，由引擎测得（不计服务器上的其他请求）</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <source>Edit last question</source>
        <translation>编辑上一个问题</translation>
    </message>
</context>
<context>
    <name>ChatView</name>
    <message>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <source>Copy code</source>
        <translation>复制代码</translation>
    </message>
    <message>
        <source>TTFT {value}</source>
        <translation>首 token 延迟 {value}</translation>
    </message>
    <message>
        <source>prefill {value} t/s</source>
        <translation>预填充 {value} t/s</translation>
    </message>
    <message>
        <source>decode {value} t/s</source>
        <translation>解码 {value} t/s</translation>
    </message>
    <message>
        <source>end-to-end {value} t/s</source>
        <translation>端到端 {value} t/s</translation>
    </message>
    <message>
        <source>{prompt} prompt tokens ({cached} cached), {generated} generated</source>
        <translation>提示 {prompt} 个 token（缓存 {cached} 个），生成 {generated} 个</translation>
    </message>
    <message>
        <source>{count} image(s) of {tokens} tokens, encoded in {value} (inside TTFT)</source>
        <translation>{count} 张图片，共 {tokens} 个 token，编码用时 {value}（计入 TTFT）</translation>
    </message>
    <message>
        <source>acceptance {share} ({per_step} tokens per step)</source>
        <translation>接受率 {share}（每步 {per_step} 个 token）</translation>
    </message>
    <message>
        <source>The loop guard stopped this answer: it was repeating itself.</source>
        <translation>循环防护停止了此回答：它在不断重复。</translation>
    </message>
    <message>
        <source>The loop guard saw this answer repeating itself and retried it with penalties.</source>
        <translation>循环防护发现此回答在重复，已加惩罚重试。</translation>
    </message>
    <message>
        <source>Stopped.</source>
        <translation>已停止。</translation>
    </message>
    <message>
        <source>Cut off: the answer failed before it ended.</source>
        <translation>已中断：回答在结束前失败了。</translation>
    </message>
    <message>
        <source>The answer failed: {error}</source>
        <translation>回答失败：{error}</translation>
    </message>
</context>
<context>
    <name>ChooseStep</name>
    <message>
        <source>{name} (downloaded)</source>
        <translation>{name}（已下载）</translation>
    </message>
    <message>
        <source>{name} (needs the internet to download)</source>
        <translation>{name}（下载需要联网）</translation>
    </message>
    <message>
        <source>≈ {size} (estimate)</source>
        <translation>≈ {size}（估计）</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Quantization</source>
        <translation>量化</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>下载大小</translation>
    </message>
    <message>
        <source>Fits</source>
        <translation>放置情况</translation>
    </message>
    <message>
        <source>Decode t/s (predicted)</source>
        <translation>解码 t/s（预测）</translation>
    </message>
    <message>
        <source>Context</source>
        <translation>上下文</translation>
    </message>
    <message>
        <source>{name} · {quant}: where every byte goes</source>
        <translation>{name} · {quant}：每个字节的去向</translation>
    </message>
    <message>
        <source>{quality} quality ({bits:.1f} bits per weight), {size} to download, licence {licence}.</source>
        <translation>质量：{quality}（每个权重 {bits:.1f} 位），下载 {size}，许可证 {licence}。</translation>
    </message>
    <message>
        <source>Predicted here: decode {decode} t/s, prefill {prefill} t/s, time to first token {ttft}; context {context}.</source>
        <translation>本机预测：解码 {decode} t/s，预填充 {prefill} t/s，首 token 时间 {ttft}；上下文 {context}。</translation>
    </message>
    <message>
        <source>&lt;b&gt;Estimated offline&lt;/b&gt;: the size is the catalog&apos;s parameter count × {bits:.2f} bits per weight, and the speed is planned for a model of that size and shape. Downloading needs the internet.</source>
        <translation>&lt;b&gt;离线估计&lt;/b&gt;：大小为目录中的参数量 × 每权重 {bits:.2f} 位，速度按该大小和结构的模型规划。下载需要联网。</translation>
    </message>
    <message>
        <source>&lt;b&gt;This model does not fit this machine.&lt;/b&gt; Pick a smaller one.</source>
        <translation>&lt;b&gt;此模型在这台机器上放不下。&lt;/b&gt;请选择更小的模型。</translation>
    </message>
    <message>
        <source>All on GPU</source>
        <translation>全部在 GPU 上</translation>
    </message>
    <message>
        <source>Experts in RAM</source>
        <translation>专家在内存中</translation>
    </message>
    <message>
        <source>Partly in RAM</source>
        <translation>部分在内存中</translation>
    </message>
    <message>
        <source>In RAM (CPU)</source>
        <translation>在内存中（CPU）</translation>
    </message>
    <message>
        <source>Reads from disk (slow)</source>
        <translation>从磁盘读取（慢）</translation>
    </message>
    <message>
        <source>Does not fit</source>
        <translation>放不下</translation>
    </message>
    <message>
        <source>Near-lossless</source>
        <translation>近乎无损</translation>
    </message>
    <message>
        <source>High</source>
        <translation>高</translation>
    </message>
    <message>
        <source>Good</source>
        <translation>良好</translation>
    </message>
    <message>
        <source>Fair</source>
        <translation>一般</translation>
    </message>
    <message>
        <source>Low</source>
        <translation>低</translation>
    </message>
    <message>
        <source>About 3 bits per weight or fewer: answers get noticeably worse.</source>
        <translation>每个权重约 3 位或更少：回答质量会明显变差。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The model hub cannot be reached&lt;/b&gt;, so Loadout cannot list models to download. Check the internet connection (and proxy settings), then press Retry.</source>
        <translation>&lt;b&gt;无法连接模型中心&lt;/b&gt;，因此 Loadout 无法列出可下载的模型。请检查网络连接（以及代理设置），然后点击“重试”。</translation>
    </message>
    <message>
        <source>&lt;b&gt;No model of the catalog could be judged.&lt;/b&gt; Press Retry; if it happens again, the details are in the log file.</source>
        <translation>&lt;b&gt;目录中没有任何模型能完成评估。&lt;/b&gt;请点击“重试”；如果再次出现，详细信息见日志文件。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The recommendations could not be made:&lt;/b&gt; {detail}. Press Retry.</source>
        <translation>&lt;b&gt;无法生成推荐：&lt;/b&gt;{detail}。请点击“重试”。</translation>
    </message>
    <message>
        <source>Planning every model of the catalog on this machine for {task}…</source>
        <translation>正在针对“{task}”在本机上规划目录中的每个模型…</translation>
    </message>
    <message>
        <source>Best first for {task}, estimated for this machine. Select one to see where it would go.</source>
        <translation>适合{task}的最佳选择在前，按本机估计。选择一个可查看它会放在哪里。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The model hub cannot be reached.&lt;/b&gt; These are the catalog&apos;s models with estimated sizes and predicted speeds on this machine; downloading needs the internet. Check the connection, then press Retry.</source>
        <translation>&lt;b&gt;无法连接模型中心。&lt;/b&gt;以下是目录中的模型，附估计大小和在本机上的预测速度；下载需要联网。请检查网络连接，然后点击“重试”。</translation>
    </message>
    <message>
        <source>Best first for {task}, each planned on this machine. Select one to see where it would go.</source>
        <translation>按适合“{task}”的程度从优到次排列，每个都已在本机上规划。选择一个即可查看它会放在哪里。</translation>
    </message>
    <message>
        <source>Offline: sizes are from the hub&apos;s listing of {when}.</source>
        <translation>离线：大小取自模型中心 {when} 的列表。</translation>
    </message>
    <message>
        <source>Retry</source>
        <translation>重试</translation>
    </message>
</context>
<context>
    <name>ClusterSection</name>
    <message>
        <source>Cluster</source>
        <translation>集群</translation>
    </message>
    <message>
        <source>Pool other computers&apos; GPUs (or RAM) with this one: each runs a worker, and its devices join the plan and the memory map.</source>
        <translation>将其他计算机的 GPU（或内存）与本机合并使用：每台计算机运行一个工作节点，其设备会加入计划和内存分布图。</translation>
    </message>
    <message>
        <source>⚠ The RPC protocol has no authentication and no encryption: add workers on a trusted local network only.</source>
        <translation>⚠ 远程过程调用协议既没有身份验证也没有加密：只在可信的局域网中添加工作节点。</translation>
    </message>
    <message>
        <source>On the other computer, run:</source>
        <translation>在另一台计算机上运行：</translation>
    </message>
    <message>
        <source>Worker</source>
        <translation>工作节点</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>No workers: plans use this computer only.</source>
        <translation>没有工作节点：计划只使用本机。</translation>
    </message>
    <message>
        <source>Address, e.g. 192.168.1.7:50052</source>
        <translation>地址，例如 192.168.1.7:50052</translation>
    </message>
    <message>
        <source>Add</source>
        <translation>添加</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Check again</source>
        <translation>重新检查</translation>
    </message>
    <message>
        <source>Checking…</source>
        <translation>正在检查…</translation>
    </message>
    <message>
        <source>CPU {index}</source>
        <translation>CPU {index}</translation>
    </message>
    <message>
        <source>GPU {index}</source>
        <translation>GPU {index}</translation>
    </message>
    <message>
        <source>{device}: {free} free of {total}</source>
        <translation>{device}：空闲 {free}，共 {total}</translation>
    </message>
    <message>
        <source>Reachable, {count} device(s): {devices}</source>
        <translation>可连接，{count} 个设备：{devices}</translation>
    </message>
    <message>
        <source>Left out: it went away while the engine was using it. Start it again there, then check again.</source>
        <translation>已排除：引擎使用它时它断开了。请在那台计算机上重新启动它，然后重新检查。</translation>
    </message>
    <message>
        <source>Unreachable: {reason}</source>
        <translation>无法连接：{reason}</translation>
    </message>
    <message>
        <source>nothing listens at that port (is the worker running?)</source>
        <translation>该端口上没有程序在监听（工作节点是否在运行？）</translation>
    </message>
    <message>
        <source>no answer in time (wrong address, or a firewall?)</source>
        <translation>未及时响应（地址错误，还是被防火墙拦截？）</translation>
    </message>
    <message>
        <source>busy: it serves another Loadout now</source>
        <translation>忙碌：它正在为另一个 Loadout 服务</translation>
    </message>
    <message>
        <source>it speaks another protocol version (use the same Loadout version on both computers)</source>
        <translation>它使用的协议版本不同（请在两台计算机上使用相同版本的 Loadout）</translation>
    </message>
    <message>
        <source>it answered, but not as a Loadout worker</source>
        <translation>它有响应，但不是 Loadout 工作节点</translation>
    </message>
    <message>
        <source>it serves no device</source>
        <translation>它没有提供任何设备</translation>
    </message>
    <message>
        <source>not a worker address</source>
        <translation>不是工作节点地址</translation>
    </message>
    <message>
        <source>cannot be reached ({detail})</source>
        <translation>无法连接（{detail}）</translation>
    </message>
    <message>
        <source>“{text}” is not a worker address. Write HOST:PORT, for example 192.168.1.7:50052 (the port is 50052 when left out).</source>
        <translation>“{text}”不是工作节点地址。请按 HOST:PORT 格式填写，例如 192.168.1.7:50052（省略端口时为 50052）。</translation>
    </message>
</context>
<context>
    <name>Codes</name>
    <message>
        <source>Main</source>
        <translation>主卡</translation>
    </message>
    <message>
        <source>Helper</source>
        <translation>辅助</translation>
    </message>
    <message>
        <source>Off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <source>NVMe SSD</source>
        <translation>NVMe 固态硬盘</translation>
    </message>
    <message>
        <source>SSD</source>
        <translation>固态硬盘</translation>
    </message>
    <message>
        <source>Hard disk</source>
        <translation>机械硬盘</translation>
    </message>
    <message>
        <source>Unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>Code</source>
        <translation>编程</translation>
    </message>
    <message>
        <source>Agent / tools</source>
        <translation>智能体 / 工具调用</translation>
    </message>
    <message>
        <source>Math</source>
        <translation>数学</translation>
    </message>
    <message>
        <source>Creative writing</source>
        <translation>创意写作</translation>
    </message>
    <message>
        <source>Automatic</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>N-gram</source>
        <translation>N 元语法</translation>
    </message>
    <message>
        <source>Draft model</source>
        <translation>草稿模型</translation>
    </message>
    <message>
        <source>MTP heads</source>
        <translation>MTP 预测头</translation>
    </message>
    <message>
        <source>DFlash drafter</source>
        <translation>DFlash 草稿模型</translation>
    </message>
    <message>
        <source>f16 (full)</source>
        <translation>f16（全精度）</translation>
    </message>
    <message>
        <source>q8_0 (half)</source>
        <translation>q8_0（一半）</translation>
    </message>
    <message>
        <source>q4_0 (quarter)</source>
        <translation>q4_0（四分之一）</translation>
    </message>
    <message>
        <source>Weights</source>
        <translation>权重</translation>
    </message>
    <message>
        <source>Experts</source>
        <translation>专家</translation>
    </message>
    <message>
        <source>KV cache</source>
        <translation>KV 缓存</translation>
    </message>
    <message>
        <source>Compute buffers</source>
        <translation>计算缓冲区</translation>
    </message>
    <message>
        <source>Vision projector</source>
        <translation>视觉投影器</translation>
    </message>
    <message>
        <source>Reserve</source>
        <translation>预留</translation>
    </message>
    <message>
        <source>Free</source>
        <translation>空闲</translation>
    </message>
    <message>
        <source>Over capacity</source>
        <translation>超出容量</translation>
    </message>
    <message>
        <source>Loadout downloads</source>
        <translation>Loadout 下载</translation>
    </message>
    <message>
        <source>Hugging Face cache</source>
        <translation>Hugging Face 缓存</translation>
    </message>
    <message>
        <source>LM Studio</source>
        <translation>LM Studio</translation>
    </message>
    <message>
        <source>Ollama</source>
        <translation>Ollama</translation>
    </message>
    <message>
        <source>your folder</source>
        <translation>你的文件夹</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>内存</translation>
    </message>
    <message>
        <source>Disk</source>
        <translation>磁盘</translation>
    </message>
    <message>
        <source>It is a worker on this same machine: it would add no speed.</source>
        <translation>它是这台机器上的工作节点：不会带来提速。</translation>
    </message>
    <message>
        <source>GPU {gpu} ({endpoint}) is a worker on this same machine: it shares this machine&apos;s cores and memory bandwidth.</source>
        <translation>GPU {gpu}（{endpoint}）是这台机器上的工作节点：它与本机共享 CPU 核心和内存带宽。</translation>
    </message>
    <message>
        <source>Some layers run on GPU {gpu} at {endpoint}, over a {link_gbps} GB/s link ({link_latency_ms} ms latency): {transfer_ms_per_token} ms of transfers per token.</source>
        <translation>部分层在 {endpoint} 的 GPU {gpu} 上运行，经由 {link_gbps} GB/s 的链路（延迟 {link_latency_ms} ms）：每个 token 传输耗时 {transfer_ms_per_token} ms。</translation>
    </message>
    <message>
        <source>The model needs the remote GPU to fit.</source>
        <translation>模型需要远程 GPU 才能放下。</translation>
    </message>
    <message>
        <source>The remote GPU makes it faster despite the network link.</source>
        <translation>尽管有网络链路开销，远程 GPU 仍能提速。</translation>
    </message>
    <message>
        <source>The {workers} remote workers are not used: this machine alone is as fast.</source>
        <translation>未使用 {workers} 个远程工作节点：仅本机就同样快。</translation>
    </message>
    <message>
        <source>Everything fits in GPU memory and RAM.</source>
        <translation>全部放得下显存和内存。</translation>
    </message>
    <message>
        <source>Everything fits in RAM.</source>
        <translation>全部都能放进内存。</translation>
    </message>
    <message>
        <source>It fits only by reading part of the model from disk while it runs: expect a big slowdown.</source>
        <translation>只有在运行时从磁盘读取部分模型才放得下：速度会大幅下降。</translation>
    </message>
    <message>
        <source>This model does not fit on this machine, not even read from disk.</source>
        <translation>此模型在这台机器上放不下，即使从磁盘读取也不行。</translation>
    </message>
    <message>
        <source>The model is larger than all GPU memory and RAM together.</source>
        <translation>模型比全部显存和内存加起来还大。</translation>
    </message>
    <message>
        <source>The weights fit, but the KV cache for this context does not.</source>
        <translation>权重放得下，但这个上下文长度的 KV 缓存放不下。</translation>
    </message>
    <message>
        <source>There is no disk to read the rest of the model from.</source>
        <translation>没有可供读取模型其余部分的磁盘。</translation>
    </message>
    <message>
        <source>It has the most free VRAM times bandwidth, so it holds the output layer and most layers.</source>
        <translation>它的空闲显存乘带宽最大，因此承载输出层和大部分层。</translation>
    </message>
    <message>
        <source>You chose it as the main GPU.</source>
        <translation>你将它设为主卡。</translation>
    </message>
    <message>
        <source>Sharing layers with it makes the whole faster.</source>
        <translation>与它分担层能让整体更快。</translation>
    </message>
    <message>
        <source>It is needed to keep weights out of RAM and off the disk.</source>
        <translation>需要它才能让权重不进内存、不落磁盘。</translation>
    </message>
    <message>
        <source>You chose it as a helper.</source>
        <translation>你将它设为辅助卡。</translation>
    </message>
    <message>
        <source>It has less than 8 GB, which costs more in transfers than it adds.</source>
        <translation>它不足 8 GB，传输开销大于它带来的收益。</translation>
    </message>
    <message>
        <source>Giving it a share would make the whole slower.</source>
        <translation>分给它一部分会让整体变慢。</translation>
    </message>
    <message>
        <source>You switched it off.</source>
        <translation>你关闭了它。</translation>
    </message>
    <message>
        <source>Everything fits on the faster GPUs without it.</source>
        <translation>不用它，更快的 GPU 就能放下全部。</translation>
    </message>
    <message>
        <source>It drives a display, so more memory is kept free on it.</source>
        <translation>它连接着显示器，因此在它上面多预留一些显存。</translation>
    </message>
    <message>
        <source>All layers are on the GPU.</source>
        <translation>所有层都在 GPU 上。</translation>
    </message>
    <message>
        <source>The routed experts of some layers stay in RAM (the cheapest bytes to move).</source>
        <translation>部分层的路由专家留在内存中（移动它们代价最小）。</translation>
    </message>
    <message>
        <source>Some whole layers run on the CPU from RAM.</source>
        <translation>部分整层在 CPU 上从内存运行。</translation>
    </message>
    <message>
        <source>What RAM cannot hold stays on disk and is read from there: speed falls off a cliff.</source>
        <translation>内存放不下的部分留在磁盘上并从那里读取：速度会断崖式下跌。</translation>
    </message>
    <message>
        <source>No usable GPU: the model runs on the CPU from RAM.</source>
        <translation>没有可用的 GPU：模型在 CPU 上从内存运行。</translation>
    </message>
    <message>
        <source>The GPU shares memory with the CPU (unified memory).</source>
        <translation>GPU 与 CPU 共享内存（统一内存）。</translation>
    </message>
    <message>
        <source>The layer placement is the one you set.</source>
        <translation>层的放置按你的设置。</translation>
    </message>
    <message>
        <source>The context is the one you asked for.</source>
        <translation>上下文长度按你的要求。</translation>
    </message>
    <message>
        <source>The context is {context} tokens: the largest that fits in the memory left after the weights.</source>
        <translation>上下文为 {context} 个 token：放下权重后剩余内存所能容纳的最大值。</translation>
    </message>
    <message>
        <source>The context is capped at {train} tokens, the length the model was trained for.</source>
        <translation>上下文上限为 {train} 个 token，即模型的训练长度。</translation>
    </message>
    <message>
        <source>Flash attention is off: on this CPU it reads the KV cache several times slower ({with_tps} t/s with it, {without_tps} t/s without, at {depth} tokens).</source>
        <translation>已关闭 Flash Attention：在这台 CPU 上它读取 KV 缓存要慢好几倍（开启时 {with_tps} t/s，关闭时 {without_tps} t/s，上下文 {depth} 个 token 时）。</translation>
    </message>
    <message>
        <source>Flash attention is on, as you chose.</source>
        <translation>已按您的选择开启 Flash Attention。</translation>
    </message>
    <message>
        <source>Flash attention is off, as you chose.</source>
        <translation>已按您的选择关闭 Flash Attention。</translation>
    </message>
    <message>
        <source>llama.cpp cannot hold this model&apos;s KV cache as {kv_type}: its heads of {head_dim} values are not whole blocks of {block}. Choose f16 or Automatic for the KV cache.</source>
        <translation>llama.cpp 无法以 {kv_type} 保存此模型的 KV 缓存：其 {head_dim} 维的注意力头不是 {block} 元素块的整数倍。请将 KV 缓存设为 f16 或自动。</translation>
    </message>
    <message>
        <source>Flash attention stays on: llama.cpp needs it for a {kv_type} KV cache.</source>
        <translation>Flash Attention 保持开启：llama.cpp 使用 {kv_type} KV 缓存时需要它。</translation>
    </message>
    <message>
        <source>GPU {gpu} ({name}) is a software device that computes on the CPU: speeds are not predicted for it.</source>
        <translation>GPU {gpu}（{name}）是在 CPU 上计算的软件设备：不预测它的速度。</translation>
    </message>
    <message>
        <source>Add RAM (to {ram_bytes}), so nothing is read from disk.</source>
        <translation>增加内存（到 {ram_bytes}），就不必从磁盘读取。</translation>
    </message>
    <message>
        <source>Use a GPU with more memory ({vram_bytes}).</source>
        <translation>换用显存更大的 GPU（{vram_bytes}）。</translation>
    </message>
    <message>
        <source>Add a second GPU (like a {gpu}).</source>
        <translation>再加一块 GPU（例如 {gpu}）。</translation>
    </message>
    <message>
        <source>Keep less RAM free in Settings: keeping {reserve_bytes} of the {ram_bytes} available leaves the model too little.</source>
        <translation>在“设置”中减少内存预留：可用的 {ram_bytes} 中预留 {reserve_bytes}，留给模型的太少。</translation>
    </message>
    <message>
        <source>The context is below 32K tokens because memory is short.</source>
        <translation>由于内存不足，上下文低于 32K 个 token。</translation>
    </message>
    <message>
        <source>The context is longer than the model was trained for (rope scaling).</source>
        <translation>上下文超过模型的训练长度（RoPE 缩放）。</translation>
    </message>
    <message>
        <source>The context you asked for was capped at the training length.</source>
        <translation>你要求的上下文已被限制为训练长度。</translation>
    </message>
    <message>
        <source>The KV cache is kept at full precision (f16).</source>
        <translation>KV 缓存保持全精度（f16）。</translation>
    </message>
    <message>
        <source>The KV cache is q8_0 so that the weights stay on the GPU.</source>
        <translation>KV 缓存使用 q8_0，以便权重留在 GPU 上。</translation>
    </message>
    <message>
        <source>The KV cache is q8_0 to make room for more context.</source>
        <translation>KV 缓存使用 q8_0，为更长的上下文腾出空间。</translation>
    </message>
    <message>
        <source>The KV cache is q4_0 so that the weights stay on the GPU.</source>
        <translation>KV 缓存使用 q4_0，以便权重留在 GPU 上。</translation>
    </message>
    <message>
        <source>The KV cache is q4_0 to make room for more context.</source>
        <translation>KV 缓存使用 q4_0，为更长的上下文腾出空间。</translation>
    </message>
    <message>
        <source>The KV cache type is the one you chose.</source>
        <translation>KV 缓存类型按你的选择。</translation>
    </message>
    <message>
        <source>Part of the KV cache is in RAM, which costs far more per byte than weights there.</source>
        <translation>部分 KV 缓存在内存中，每字节的代价远高于放在那里的权重。</translation>
    </message>
    <message>
        <source>This is the only quantization available.</source>
        <translation>这是唯一可用的量化版本。</translation>
    </message>
    <message>
        <source>This is the best quality that fits without reading from disk.</source>
        <translation>这是无需从磁盘读取即可放下的最佳质量。</translation>
    </message>
    <message>
        <source>No quantization reaches a usable speed; this is the fastest.</source>
        <translation>没有任何量化版本能达到可用速度；这是最快的。</translation>
    </message>
    <message>
        <source>At 3 bits or less, quality drops sharply for code and agent work.</source>
        <translation>在 3 位及以下，编程和智能体任务的质量会急剧下降。</translation>
    </message>
    <message>
        <source>Few bits with a MoE model and MTP on is known to cause endless loops.</source>
        <translation>低位量化加上 MoE 模型并开启 MTP，已知会导致无限循环。</translation>
    </message>
    <message>
        <source>Speculation is off: it does not help creative writing.</source>
        <translation>推测解码已关闭：它对创意写作没有帮助。</translation>
    </message>
    <message>
        <source>Speculation is off: its gain vanishes with several parallel slots.</source>
        <translation>推测解码已关闭：多个并行槽位时其收益消失。</translation>
    </message>
    <message>
        <source>Speculation is off: it would not be faster here.</source>
        <translation>推测解码已关闭：在这里不会更快。</translation>
    </message>
    <message>
        <source>Speculation is off: its memory does not fit on the GPU.</source>
        <translation>推测解码已关闭：其所需显存在 GPU 上放不下。</translation>
    </message>
    <message>
        <source>Speculation is off for this kind of task.</source>
        <translation>此类任务关闭推测解码。</translation>
    </message>
    <message>
        <source>The model&apos;s MTP heads draft tokens ahead.</source>
        <translation>由模型的 MTP 预测头提前起草 token。</translation>
    </message>
    <message>
        <source>N-gram lookup drafts tokens ahead.</source>
        <translation>由 N 元语法查找提前起草 token。</translation>
    </message>
    <message>
        <source>A small draft model drafts tokens ahead.</source>
        <translation>由小型草稿模型提前起草 token。</translation>
    </message>
    <message>
        <source>Speculation is set the way you chose.</source>
        <translation>推测解码按你的选择设置。</translation>
    </message>
    <message>
        <source>MTP was asked for, but this model has no MTP heads.</source>
        <translation>要求使用 MTP，但此模型没有 MTP 预测头。</translation>
    </message>
    <message>
        <source>A draft model was asked for, but none is set.</source>
        <translation>要求使用草稿模型，但尚未设置。</translation>
    </message>
    <message>
        <source>Your setting is slower than the planner&apos;s choice.</source>
        <translation>你的设置比规划器的选择更慢。</translation>
    </message>
    <message>
        <source>Your placement does not fit on a device.</source>
        <translation>你的放置方案在某个设备上放不下。</translation>
    </message>
    <message>
        <source>Your setting does not apply here and was ignored.</source>
        <translation>你的设置在此不适用，已忽略。</translation>
    </message>
    <message>
        <source>Decoding will be slow for interactive use.</source>
        <translation>解码速度对交互使用来说会很慢。</translation>
    </message>
    <message>
        <source>Each parallel slot needs its own KV cache.</source>
        <translation>每个并行槽位都需要自己的 KV 缓存。</translation>
    </message>
    <message>
        <source>Bottleneck: capacity. Part of the model is read from disk.</source>
        <translation>瓶颈：容量。部分模型从磁盘读取。</translation>
    </message>
    <message>
        <source>Bottleneck: memory bandwidth. Each token reads every active weight.</source>
        <translation>瓶颈：内存带宽。每个 token 都要读取所有活跃权重。</translation>
    </message>
    <message>
        <source>Bottleneck: compute.</source>
        <translation>瓶颈：算力。</translation>
    </message>
    <message>
        <source>Bottleneck: fixed per-token costs.</source>
        <translation>瓶颈：每个 token 的固定开销。</translation>
    </message>
    <message>
        <source>Bottleneck: transfers between devices.</source>
        <translation>瓶颈：设备之间的传输。</translation>
    </message>
    <message>
        <source>Use a smaller quantization.</source>
        <translation>使用更小的量化版本。</translation>
    </message>
    <message>
        <source>Use a mixture-of-experts model: it reads only the active experts per token.</source>
        <translation>使用混合专家（MoE）模型：每个 token 只读取活跃专家。</translation>
    </message>
    <message>
        <source>Ask for a shorter context.</source>
        <translation>要求更短的上下文。</translation>
    </message>
    <message>
        <source>Use a q8_0 KV cache.</source>
        <translation>使用 q8_0 KV 缓存。</translation>
    </message>
    <message>
        <source>Use faster RAM (more channels or a higher clock).</source>
        <translation>使用更快的内存（更多通道或更高频率）。</translation>
    </message>
    <message>
        <source>Nothing to change: this is as fast as this machine gets.</source>
        <translation>无需更改：这已是这台机器能达到的最快速度。</translation>
    </message>
</context>
<context>
    <name>DoneStep</name>
    <message>
        <source>✓ {name} is downloaded and verified.</source>
        <translation>✓ {name} 已下载并通过校验。</translation>
    </message>
    <message>
        <source>{name} is downloaded but not verified: the hub gave no sha256 to check it against.</source>
        <translation>{name} 已下载，但未经校验：模型站点没有提供可用于核对它的 sha256。</translation>
    </message>
    <message>
        <source>Saved as {path}. It is listed on the Models page from now on.</source>
        <translation>已保存为 {path}。今后它会列在“模型”页中。</translation>
    </message>
    <message>
        <source>Load and chat</source>
        <translation>加载并聊天</translation>
    </message>
    <message>
        <source>Plan it for this machine, start the engine, then open the chat.</source>
        <translation>为本机规划它、启动引擎，然后打开聊天。</translation>
    </message>
    <message>
        <source>See its plan first</source>
        <translation>先查看其计划</translation>
    </message>
</context>
<context>
    <name>DownloadStep</name>
    <message>
        <source>{done} of {total}</source>
        <translation>{done} / {total}</translation>
    </message>
    <message>
        <source>{speed}/s</source>
        <translation>{speed}/s</translation>
    </message>
    <message>
        <source>about {eta} left</source>
        <translation>剩余约 {eta}</translation>
    </message>
    <message>
        <source>Check again</source>
        <translation>重新检查</translation>
    </message>
    <message>
        <source>Try again</source>
        <translation>重试</translation>
    </message>
    <message>
        <source>{size} into {folder} ({free} free on that disk). Every file is checked against the hub&apos;s sha256.</source>
        <translation>{size}，下载到 {folder}（该磁盘空闲 {free}）。每个文件都会与模型中心提供的 sha256 核对。</translation>
    </message>
    <message>
        <source>Checking the hub and the free disk space…</source>
        <translation>正在检查模型中心和磁盘空闲空间…</translation>
    </message>
    <message>
        <source>Ready to download.</source>
        <translation>可以开始下载。</translation>
    </message>
    <message>
        <source>Downloading… Pause (or closing this window) keeps what has arrived; Cancel removes it.</source>
        <translation>正在下载… “暂停”（或关闭此窗口）会保留已下载的部分；“取消下载”会将其删除。</translation>
    </message>
    <message>
        <source>Pausing…</source>
        <translation>正在暂停…</translation>
    </message>
    <message>
        <source>Paused at {done} of {total}. What was downloaded is kept: Resume continues from there, also after a restart.</source>
        <translation>已暂停于 {done} / {total}。已下载的部分会保留：点击“继续”即从该处接着下载，重启后也可以。</translation>
    </message>
    <message>
        <source>Cancelling and removing the partial download…</source>
        <translation>正在取消并删除未完成的下载…</translation>
    </message>
    <message>
        <source>Downloaded and verified.</source>
        <translation>已下载并通过校验。</translation>
    </message>
    <message>
        <source>Downloaded, but not verified: the hub gave no sha256 to check the file against.</source>
        <translation>已下载，但未经校验：模型站点没有提供可用于核对该文件的 sha256。</translation>
    </message>
    <message>
        <source>Cancelled: the partial download was removed.</source>
        <translation>已取消：未完成的下载已删除。</translation>
    </message>
    <message>
        <source>&lt;b&gt;Not enough free disk space.&lt;/b&gt; This download needs {need} (and {margin} kept free) but only {free} is free in {folder}. Free some space, then press Check again.</source>
        <translation>&lt;b&gt;磁盘空间不足。&lt;/b&gt;此下载需要 {need}（另需预留 {margin}），但 {folder} 中只有 {free} 空闲。请腾出一些空间，然后点击“重新检查”。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The model hub cannot be reached.&lt;/b&gt; Check the internet connection, then press Try again. What was downloaded so far is kept.</source>
        <translation>&lt;b&gt;无法连接模型中心。&lt;/b&gt;请检查网络连接，然后点击“重试”。已下载的部分会保留。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The hub no longer has this file.&lt;/b&gt; Go back and pick another model.</source>
        <translation>&lt;b&gt;模型中心已不再提供此文件。&lt;/b&gt;请返回并选择其他模型。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The file did not match the hub&apos;s sha256&lt;/b&gt; and was removed. Press Try again to download it again.</source>
        <translation>&lt;b&gt;文件与模型中心提供的 sha256 不符&lt;/b&gt;，已被删除。点击“重试”重新下载。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The hub gives no checksum (sha256) for this file&lt;/b&gt;, so the download cannot be checked: a corrupt or substituted file would go unnoticed. Nothing was downloaded. To take that risk, tick the box below and press Try again.</source>
        <translation>&lt;b&gt;模型中心没有为此文件提供校验和（sha256）&lt;/b&gt;，因此无法校验下载：损坏或被替换的文件将无从察觉。未下载任何内容。若愿意承担此风险，请勾选下方的选项并点击“重试”。</translation>
    </message>
    <message>
        <source>&lt;b&gt;This file is being downloaded elsewhere&lt;/b&gt; (another Loadout window or command). Wait for it, then press Try again.</source>
        <translation>&lt;b&gt;此文件正在别处下载&lt;/b&gt;（另一个 Loadout 窗口或命令）。请等待其完成，然后点击“重试”。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The download failed:&lt;/b&gt; {detail}. Press Try again.</source>
        <translation>&lt;b&gt;下载失败：&lt;/b&gt;{detail}。请点击“重试”。</translation>
    </message>
    <message>
        <source>{n} s</source>
        <translation>{n} 秒</translation>
    </message>
    <message>
        <source>{n} min</source>
        <translation>{n} 分钟</translation>
    </message>
    <message>
        <source>{h} h {m} min</source>
        <translation>{h} 小时 {m} 分钟</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>下载</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Cancel download</source>
        <translation>取消下载</translation>
    </message>
    <message>
        <source>Stop and remove what was downloaded.</source>
        <translation>停止并删除已下载的部分。</translation>
    </message>
    <message>
        <source>Download even if the hub gives no checksum (risky: the file cannot be checked, and a corrupt or substituted file would go unnoticed)</source>
        <translation>即使模型中心未提供校验和也下载（有风险：文件无法校验，损坏或被替换的文件将无从察觉）</translation>
    </message>
</context>
<context>
    <name>EngineBanner</name>
    <message>
        <source>Loadout runs its CPU engine build: this computer has a GPU, but no engine build here can use it (its driver&apos;s runtime is missing, or Loadout has no build for it). Models run much more slowly on the CPU. Settings → Engine shows the builds.</source>
        <translation>Loadout 正在使用 CPU 引擎版本：这台计算机有 GPU，但这里没有可以使用它的引擎版本（缺少其驱动的运行时，或 Loadout 没有适用于它的版本）。模型在 CPU 上运行会慢得多。“设置 → 引擎”中列出了各个版本。</translation>
    </message>
    <message>
        <source>The engine stopped (exit code {code}): worker {workers} went away or stopped answering, and the answer ended there. Loadout is still running. Plan again without it, or start the worker again and check it in Settings → Cluster.</source>
        <translation>引擎已停止（退出码 {code}）：工作节点 {workers} 已断开或不再响应，回答到此为止。Loadout 仍在运行。请不用它重新规划，或重新启动该工作节点，并在“设置 → 集群”中检查它。</translation>
    </message>
    <message>
        <source>The engine stopped unexpectedly (exit code {code}); Loadout is still running. Its last log lines say why. A safer plan keeps more memory free (fewer layers on the GPU, smaller batches).</source>
        <translation>引擎意外停止（退出码 {code}）；Loadout 仍在运行。下方是引擎最后的日志，说明了原因。更安全的方案会留出更多空闲内存（GPU 上的层更少，批次更小）。</translation>
    </message>
    <message>
        <source>Retry with a safer plan</source>
        <translation>用更安全的方案重试</translation>
    </message>
    <message>
        <source>Plan again without {workers}</source>
        <translation>不用 {workers} 重新规划</translation>
    </message>
    <message>
        <source>Dismiss</source>
        <translation>关闭</translation>
    </message>
</context>
<context>
    <name>EngineSection</name>
    <message>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>Build to use</source>
        <translation>使用的引擎版本</translation>
    </message>
    <message>
        <source>Takes effect when Loadout starts again.</source>
        <translation>下次启动 Loadout 时生效。</translation>
    </message>
    <message>
        <source>Restart now</source>
        <translation>立即重启</translation>
    </message>
    <message>
        <source>an NVIDIA GPU</source>
        <translation>NVIDIA GPU</translation>
    </message>
    <message>
        <source>an AMD GPU</source>
        <translation>AMD GPU</translation>
    </message>
    <message>
        <source>an Apple GPU</source>
        <translation>Apple GPU</translation>
    </message>
    <message>
        <source>a GPU Vulkan can drive</source>
        <translation>Vulkan 可驱动的 GPU</translation>
    </message>
    <message>
        <source>chosen in Settings</source>
        <translation>在设置中选择</translation>
    </message>
    <message>
        <source>chosen because {gpu} is present</source>
        <translation>因检测到 {gpu} 而选择</translation>
    </message>
    <message>
        <source>a GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>no GPU was found</source>
        <translation>未找到 GPU</translation>
    </message>
    <message>
        <source>a GPU was found, but no engine build here can use it (its driver&apos;s runtime is missing, or Loadout has no build for it), so models run on the CPU only, much more slowly</source>
        <translation>找到了 GPU，但这里没有可以使用它的引擎版本（缺少其驱动的运行时，或 Loadout 没有适用于它的版本），因此模型只在 CPU 上运行，速度慢得多</translation>
    </message>
    <message>
        <source>Running now: {build} — {why}</source>
        <translation>当前运行：{build} — {why}</translation>
    </message>
    <message>
        <source>⚠ The {build} build chosen in Settings cannot run on this computer, so Loadout chose by itself.</source>
        <translation>⚠ 设置中选择的 {build} 版本无法在这台计算机上运行，因此 Loadout 自行做了选择。</translation>
    </message>
    <message>
        <source>Running now: the engine installed with Python (this start did not go through Loadout&apos;s launcher, which chooses among the builds).</source>
        <translation>当前运行：随 Python 安装的引擎（本次启动没有经过 Loadout 的启动器，而正是启动器在各版本之间做选择）。</translation>
    </message>
    <message>
        <source>This installation has one engine build (checking it…).</source>
        <translation>此安装只有一个引擎版本（正在检查…）。</translation>
    </message>
    <message>
        <source>This installation has one engine build, and it cannot be loaded: {error}</source>
        <translation>此安装只有一个引擎版本，且无法加载：{error}</translation>
    </message>
    <message>
        <source>with GPU offload to {gpus}</source>
        <translation>支持卸载到 GPU（{gpus}）</translation>
    </message>
    <message>
        <source>which finds no GPU here: models run on the CPU</source>
        <translation>在本机上找不到 GPU：模型在 CPU 上运行</translation>
    </message>
    <message>
        <source>This installation has one engine build: llama.cpp through llama-cpp-python {version}, {offload}.</source>
        <translation>此安装只有一个引擎版本：llama.cpp（通过 llama-cpp-python {version}），{offload}。</translation>
    </message>
    <message>
        <source>Automatic (matches this computer&apos;s GPUs)</source>
        <translation>自动（匹配这台计算机的 GPU）</translation>
    </message>
</context>
<context>
    <name>ErrorReporter</name>
    <message>
        <source>{name} cannot be read as a GGUF model ({detail}). If it was downloaded, it may be incomplete: download it again. Otherwise open a .gguf model file (for a model split in parts, its first part).</source>
        <translation>无法将 {name} 读取为 GGUF 模型（{detail}）。如果它是下载的，可能没有下载完整：请重新下载。否则请打开一个 .gguf 模型文件（分成多个部分的模型请打开第一部分）。</translation>
    </message>
    <message>
        <source>The model file could not be found: {detail}</source>
        <translation>找不到模型文件：{detail}</translation>
    </message>
    <message>
        <source>This file is not a GGUF model Loadout can read: {detail}</source>
        <translation>此文件不是 Loadout 能读取的 GGUF 模型：{detail}</translation>
    </message>
    <message>
        <source>Loadout cannot plan this model yet: {detail}</source>
        <translation>Loadout 暂时还无法规划此模型：{detail}</translation>
    </message>
    <message>
        <source>The rig file is not valid: {detail}</source>
        <translation>配置文件无效：{detail}</translation>
    </message>
    <message>
        <source>Out of memory: {detail}</source>
        <translation>内存不足：{detail}</translation>
    </message>
    <message>
        <source>{detail}</source>
        <translation>{detail}</translation>
    </message>
    <message>
        <source>Permission denied: {detail}</source>
        <translation>权限不足：{detail}</translation>
    </message>
    <message>
        <source>A file could not be read or written: {detail}</source>
        <translation>无法读取或写入文件：{detail}</translation>
    </message>
    <message>
        <source>Something went wrong ({kind}): {detail}</source>
        <translation>出错了（{kind}）：{detail}</translation>
    </message>
    <message>
        <source>Loadout: something went wrong</source>
        <translation>Loadout：出错了</translation>
    </message>
    <message>
        <source>Details are in the log file, in {folder}</source>
        <translation>详细信息见日志文件，位于 {folder}</translation>
    </message>
</context>
<context>
    <name>GpuRoles</name>
    <message>
        <source>GPU {index}: {role}</source>
        <translation>GPU {index}：{role}</translation>
    </message>
    <message>
        <source>Let the planner choose</source>
        <translation>交给规划器决定</translation>
    </message>
    <message>
        <source>No GPU: everything runs on the CPU.</source>
        <translation>没有 GPU：全部在 CPU 上运行。</translation>
    </message>
    <message>
        <source>Earlier in the order (holds the first layers)</source>
        <translation>顺序提前（承载前面的层）</translation>
    </message>
    <message>
        <source>Earlier in the order</source>
        <translation>顺序提前</translation>
    </message>
    <message>
        <source>Later in the order</source>
        <translation>顺序推后</translation>
    </message>
</context>
<context>
    <name>HomePage</name>
    <message>
        <source>This machine</source>
        <translation>本机</translation>
    </message>
    <message>
        <source>Detect again</source>
        <translation>重新检测</translation>
    </message>
    <message>
        <source>What if…</source>
        <translation>假设…</translation>
    </message>
    <message>
        <source>Plan for an edited machine: add or remove GPUs, change RAM, open or save rig files</source>
        <translation>为修改后的机器做规划：增删 GPU、修改内存、打开或保存配置文件</translation>
    </message>
    <message>
        <source>Measure this machine</source>
        <translation>测量本机</translation>
    </message>
    <message>
        <source>Run a small model for about a minute, so that speed predictions learn this machine</source>
        <translation>用一个小模型运行约一分钟，让速度预测学习本机</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Stop measuring (the runs it already made still count)</source>
        <translation>停止测量（已完成的运行仍然计入）</translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Memory and CPU</source>
        <translation>内存与 CPU</translation>
    </message>
    <message>
        <source>Disks</source>
        <translation>磁盘</translation>
    </message>
    <message>
        <source>No GPU found: models run on the CPU from RAM.</source>
        <translation>未找到 GPU：模型在 CPU 上从内存运行。</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>VRAM free / total</source>
        <translation>显存 空闲 / 总计</translation>
    </message>
    <message>
        <source>Bandwidth</source>
        <translation>带宽</translation>
    </message>
    <message>
        <source>Role</source>
        <translation>角色</translation>
    </message>
    <message>
        <source>Why</source>
        <translation>原因</translation>
    </message>
    <message>
        <source>Folder</source>
        <translation>文件夹</translation>
    </message>
    <message>
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>Read speed</source>
        <translation>读取速度</translation>
    </message>
    <message>
        <source>Detecting hardware: CPU and RAM…</source>
        <translation>正在检测硬件：CPU 与内存…</translation>
    </message>
    <message>
        <source>Detecting hardware: GPUs…</source>
        <translation>正在检测硬件：GPU…</translation>
    </message>
    <message>
        <source>Detecting hardware: engine devices…</source>
        <translation>正在检测硬件：引擎设备…</translation>
    </message>
    <message>
        <source>Measuring RAM bandwidth…</source>
        <translation>正在测量内存带宽…</translation>
    </message>
    <message>
        <source>Measuring what one CPU core computes…</source>
        <translation>正在测量单个 CPU 核心的计算速度…</translation>
    </message>
    <message>
        <source>Measuring GPU bandwidth…</source>
        <translation>正在测量 GPU 带宽…</translation>
    </message>
    <message>
        <source>Measuring disk read speed…</source>
        <translation>正在测量磁盘读取速度…</translation>
    </message>
    <message>
        <source>Detection finished.</source>
        <translation>检测完成。</translation>
    </message>
    <message>
        <source>Detecting hardware…</source>
        <translation>正在检测硬件…</translation>
    </message>
    <message>
        <source>Hardware not detected yet.</source>
        <translation>尚未检测硬件。</translation>
    </message>
    <message>
        <source>Detected.</source>
        <translation>已检测。</translation>
    </message>
    <message>
        <source>pick a model to see</source>
        <translation>选择模型后显示</translation>
    </message>
    <message>
        <source>RAM {available} available of {total} · {bandwidth} · {cpu}, {cores} cores / {threads} threads</source>
        <translation>内存 可用 {available}，共 {total} · {bandwidth} · {cpu}，{cores} 核 / {threads} 线程</translation>
    </message>
    <message>
        <source>Measuring this machine: loading a small model…</source>
        <translation>正在测量本机：加载小模型…</translation>
    </message>
    <message>
        <source>Stopping the measurement…</source>
        <translation>正在停止测量…</translation>
    </message>
    <message>
        <source>Measuring this machine: run {run}, decode {decode} t/s, prefill {prefill} t/s…</source>
        <translation>正在测量本机：第 {run} 次运行，解码 {decode} t/s，预填充 {prefill} t/s…</translation>
    </message>
    <message>
        <source>Measuring stopped.</source>
        <translation>测量已停止。</translation>
    </message>
    <message>
        <source>Measured {count} runs: decode {decode} t/s (median). Plans are now calibrated on {runs} runs on this machine.</source>
        <translation>已测量 {count} 次运行：解码 {decode} t/s（中位数）。规划现已根据本机的 {runs} 次运行校准。</translation>
    </message>
    <message>
        <source>Measuring failed: {error}</source>
        <translation>测量失败：{error}</translation>
    </message>
</context>
<context>
    <name>LoadRefusal</name>
    <message>
        <source>{name} was not loaded. {why}</source>
        <translation>未加载 {name}。{why}</translation>
    </message>
    <message>
        <source>{name} was not loaded: it does not fit in this machine&apos;s memory. {why} Choose a smaller model or quantization on the Models page, or a shorter context on the Plan page.</source>
        <translation>未加载 {name}：本机内存放不下它。{why}请在“模型”页选择更小的模型或量化版本，或在“计划”页选择更短的上下文。</translation>
    </message>
    <message>
        <source>{name} was not loaded: its plan is for the what-if rig. Go back to this machine on the Plan page to load it.</source>
        <translation>未加载 {name}：它的计划针对假设的配置。请在“计划”页回到本机后再加载。</translation>
    </message>
    <message>
        <source>No model to load yet: choose one on the Models page (or the demo model); it loads once its plan is made.</source>
        <translation>还没有可加载的模型：请在“模型”页选择一个（或演示模型）；计划做好后就会加载。</translation>
    </message>
</context>
<context>
    <name>MachineStep</name>
    <message>
        <source>Still detecting this machine&apos;s hardware… The next step opens as soon as it is known.</source>
        <translation>仍在检测本机硬件…检测完成后即可进入下一步。</translation>
    </message>
    <message>
        <source>Models are recommended for the edited what-if rig below (Plan page).</source>
        <translation>将针对下方修改后的假设配置（“计划”页）推荐模型。</translation>
    </message>
    <message>
        <source>Models are recommended for this machine, as detected:</source>
        <translation>将针对检测到的本机配置推荐模型：</translation>
    </message>
    <message>
        <source>{name}: {free} free of {total} VRAM, {bandwidth}</source>
        <translation>{name}：显存空闲 {free}，共 {total}，{bandwidth}</translation>
    </message>
    <message>
        <source>None: models run on the CPU, from RAM.</source>
        <translation>无：模型在 CPU 上从内存运行。</translation>
    </message>
    <message>
        <source>{available} available of {total}, {bandwidth}</source>
        <translation>可用 {available}，共 {total}，{bandwidth}</translation>
    </message>
    <message>
        <source>{cpu}, {cores} cores</source>
        <translation>{cpu}，{cores} 核</translation>
    </message>
    <message>
        <source>{free} free in {folder}</source>
        <translation>{folder} 中空闲 {free}</translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Memory (RAM)</source>
        <translation>内存</translation>
    </message>
    <message>
        <source>Processor</source>
        <translation>处理器</translation>
    </message>
    <message>
        <source>Disk for downloads</source>
        <translation>下载所在磁盘</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>Loadout</source>
        <translation>Loadout</translation>
    </message>
    <message>
        <source>Home</source>
        <translation>主页</translation>
    </message>
    <message>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Plan</source>
        <translation>计划</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>Server</source>
        <translation>服务器</translation>
    </message>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>{page} (Ctrl+{number})</source>
        <translation>{page}（Ctrl+{number}）</translation>
    </message>
    <message>
        <source>Pages</source>
        <translation>页面</translation>
    </message>
    <message>
        <source>Model loading progress</source>
        <translation>模型加载进度</translation>
    </message>
    <message>
        <source>Engine: not loaded</source>
        <translation>引擎：未加载</translation>
    </message>
    <message>
        <source>Engine: loading {percent}%</source>
        <translation>引擎：加载中 {percent}%</translation>
    </message>
    <message>
        <source>Engine: ready</source>
        <translation>引擎：就绪</translation>
    </message>
    <message>
        <source>Engine: unloading</source>
        <translation>引擎：卸载中</translation>
    </message>
    <message>
        <source>Engine: stopped unexpectedly</source>
        <translation>引擎：意外停止</translation>
    </message>
    <message>
        <source>Engine: preparing to load</source>
        <translation>引擎：准备加载</translation>
    </message>
    <message>
        <source>Model: {name}</source>
        <translation>模型：{name}</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>Decode: {tps} t/s (last answer)</source>
        <translation>解码：{tps} t/s（上一个回答）</translation>
    </message>
    <message>
        <source>The decode t/s of the last chat answer (live while it streams), as the engine measures it; the Server page charts all requests together</source>
        <translation>上一个聊天回答的解码 t/s（流式输出时实时更新），由引擎测得；服务器页面的图表显示全部请求的合计</translation>
    </message>
    <message>
        <source>VRAM in use: {used} / {total}</source>
        <translation>显存占用：{used} / {total}</translation>
    </message>
    <message>
        <source>VRAM: none</source>
        <translation>显存：无</translation>
    </message>
    <message>
        <source>RAM in use: {used} / {total}</source>
        <translation>内存占用：{used} / {total}</translation>
    </message>
</context>
<context>
    <name>MemoryMap</name>
    <message>
        <source>{kind}: {size} ({share:.0f}% of {capacity})</source>
        <translation>{kind}：{size}（占 {capacity} 的 {share:.0f}%）</translation>
    </message>
    <message>
        <source>Layers {spans}</source>
        <translation>层 {spans}</translation>
    </message>
    <message>
        <source>{used} of {capacity}</source>
        <translation>{used} / {capacity}</translation>
    </message>
    <message>
        <source>{size} · layers {spans}</source>
        <translation>{size} · 第 {spans} 层</translation>
    </message>
</context>
<context>
    <name>ModelWizard</name>
    <message>
        <source>Show recommendations</source>
        <translation>查看推荐</translation>
    </message>
    <message>
        <source>Use this model</source>
        <translation>使用此模型</translation>
    </message>
    <message>
        <source>Download this model</source>
        <translation>下载此模型</translation>
    </message>
    <message>
        <source>Next</source>
        <translation>下一步</translation>
    </message>
    <message>
        <source>Downloading needs the internet: the model hub cannot be reached.</source>
        <translation>下载需要联网：无法连接模型中心。</translation>
    </message>
    <message>
        <source>Machine</source>
        <translation>机器</translation>
    </message>
    <message>
        <source>Task</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>Choose</source>
        <translation>选择</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>下载</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>Find a model for this machine</source>
        <translation>为本机寻找模型</translation>
    </message>
    <message>
        <source>This machine</source>
        <translation>本机</translation>
    </message>
    <message>
        <source>What is it for?</source>
        <translation>用来做什么？</translation>
    </message>
    <message>
        <source>Recommended models</source>
        <translation>推荐模型</translation>
    </message>
    <message>
        <source>Ready to chat</source>
        <translation>可以开始聊天了</translation>
    </message>
    <message>
        <source>Back</source>
        <translation>上一步</translation>
    </message>
    <message>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
</context>
<context>
    <name>ModelsPage</name>
    <message>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Pick a model to plan it. Folders to search are set in Settings.</source>
        <translation>选择一个模型来规划。要搜索的文件夹在“设置”中指定。</translation>
    </message>
    <message>
        <source>Open a .gguf file…</source>
        <translation>打开 .gguf 文件…</translation>
    </message>
    <message>
        <source>Models found</source>
        <translation>找到的模型</translation>
    </message>
    <message>
        <source>Plan this model</source>
        <translation>规划此模型</translation>
    </message>
    <message>
        <source>Look again</source>
        <translation>重新查找</translation>
    </message>
    <message>
        <source>Find a model for this machine…</source>
        <translation>为本机寻找模型…</translation>
    </message>
    <message>
        <source>Models recommended for this machine&apos;s hardware, downloaded and ready to chat</source>
        <translation>根据本机硬件推荐的模型，下载后即可聊天</translation>
    </message>
    <message>
        <source>Looking for models on disk…</source>
        <translation>正在磁盘上查找模型…</translation>
    </message>
    <message>
        <source>Demo model (SmolLM2 135M Instruct, {size})</source>
        <translation>演示模型（SmolLM2 135M Instruct，{size}）</translation>
    </message>
    <message>
        <source>reads images</source>
        <translation>可读图片</translation>
    </message>
    <message>
        <source>⚠ cannot be read as a model</source>
        <translation>⚠ 无法作为模型读取</translation>
    </message>
    <message>
        <source>opened from {folder}</source>
        <translation>打开自 {folder}</translation>
    </message>
    <message>
        <source>Selected: {name}</source>
        <translation>已选择：{name}</translation>
    </message>
    <message>
        <source>No model selected.</source>
        <translation>未选择模型。</translation>
    </message>
    <message>
        <source>Open a GGUF model</source>
        <translation>打开 GGUF 模型</translation>
    </message>
    <message>
        <source>GGUF models (*.gguf)</source>
        <translation>GGUF 模型 (*.gguf)</translation>
    </message>
</context>
<context>
    <name>PlanPage</name>
    <message>
        <source>Memory confirmed by llama.cpp.</source>
        <translation>内存用量已由 llama.cpp 确认。</translation>
    </message>
    <message>
        <source>Memory corrected by llama.cpp&apos;s dry run ({devices}).</source>
        <translation>内存用量已按 llama.cpp 的试运行修正（{devices}）。</translation>
    </message>
    <message>
        <source>llama.cpp&apos;s dry run differs ({devices}).</source>
        <translation>llama.cpp 的试运行结果与计划不同（{devices}）。</translation>
    </message>
    <message>
        <source>Pick a model on the Models page to see its plan.</source>
        <translation>在“模型”页选择一个模型以查看其计划。</translation>
    </message>
    <message>
        <source>Waiting for this machine&apos;s hardware…</source>
        <translation>正在等待本机硬件信息…</translation>
    </message>
    <message>
        <source>Fits. Context {context} per sequence × {parallel}, KV {kv}, speculation {spec}.</source>
        <translation>放得下。每个序列上下文 {context} × {parallel}，KV {kv}，推测解码 {spec}。</translation>
    </message>
    <message>
        <source>{advice} → decode {tps} t/s</source>
        <translation>{advice} → 解码 {tps} t/s</translation>
    </message>
    <message>
        <source>Working out what would make this faster…</source>
        <translation>正在计算怎样能更快…</translation>
    </message>
    <message>
        <source>This machine, for comparison: decode {decode} t/s, prefill {prefill} t/s, time to first token {ttft}.</source>
        <translation>本机对比：解码 {decode} t/s，预填充 {prefill} t/s，首 token 时间 {ttft}。</translation>
    </message>
    <message>
        <source>No advice for this plan.</source>
        <translation>此计划没有建议。</translation>
    </message>
    <message>
        <source>This plan is for the what-if rig: go back to this machine to load the model.</source>
        <translation>此计划针对假设的配置：回到本机才能加载模型。</translation>
    </message>
    <message>
        <source>This plan does not fit: change the request to load it.</source>
        <translation>此计划放不下：请修改请求后再加载。</translation>
    </message>
    <message>
        <source>Load again</source>
        <translation>重新加载</translation>
    </message>
    <message>
        <source>No plan: the planner stopped with an error (see the message).</source>
        <translation>没有计划：规划器因错误而停止（见提示信息）。</translation>
    </message>
    <message>
        <source>Nominal figure, not predicted for a software device: {figure}</source>
        <translation>名义数值，软件设备的速度不作预测：{figure}</translation>
    </message>
    <message>
        <source>time to first token ({tokens}-token prompt)</source>
        <translation>首 token 时间（{tokens} token 的提示）</translation>
    </message>
    <message>
        <source>Does not fit as asked, so it cannot be loaded: choose a shorter context here, or a smaller model or quantization on the Models page.</source>
        <translation>按要求放不下，因此无法加载：请在这里选择更短的上下文，或在“模型”页选择更小的模型或量化版本。</translation>
    </message>
    <message>
        <source>Runs only by reading from disk. Context {context} per sequence × {parallel}, KV {kv}, speculation {spec}.</source>
        <translation>只能靠从磁盘读取来运行。每个序列上下文 {context} × {parallel}，KV {kv}，推测解码 {spec}。</translation>
    </message>
    <message>
        <source>Reads images: {tokens} tokens each, time to first token with one image {ttft}.</source>
        <translation>可读图片：每张 {tokens} 个 token，附一张图片时首个 token 用时 {ttft}。</translation>
    </message>
    <message>
        <source>Calibrated on one run on this machine. Raw prediction: decode {decode} t/s, prefill {prefill} t/s, time to first token {ttft}.</source>
        <translation>已根据本机的 1 次运行校准。原始预测：解码 {decode} t/s，预填充 {prefill} t/s，首 token 时间 {ttft}。</translation>
    </message>
    <message>
        <source>Calibrated on {runs} runs on this machine. Raw prediction: decode {decode} t/s, prefill {prefill} t/s, time to first token {ttft}.</source>
        <translation>已根据本机的 {runs} 次运行校准。原始预测：解码 {decode} t/s，预填充 {prefill} t/s，首 token 时间 {ttft}。</translation>
    </message>
    <message>
        <source>Auto</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>Reading the model…</source>
        <translation>正在读取模型…</translation>
    </message>
    <message>
        <source>Plan: {name}</source>
        <translation>计划：{name}</translation>
    </message>
    <message>
        <source>Plan</source>
        <translation>计划</translation>
    </message>
    <message>
        <source>For: what-if rig</source>
        <translation>对象：假设的配置</translation>
    </message>
    <message>
        <source>For: this machine</source>
        <translation>对象：本机</translation>
    </message>
    <message>
        <source>What if…</source>
        <translation>假设…</translation>
    </message>
    <message>
        <source>Back to this machine</source>
        <translation>回到本机</translation>
    </message>
    <message>
        <source>Start the engine with this plan, then chat or serve it.</source>
        <translation>按此方案启动引擎，然后聊天或提供服务。</translation>
    </message>
    <message>
        <source>Unload</source>
        <translation>卸载</translation>
    </message>
    <message>
        <source>Stop the engine: frees all its memory.</source>
        <translation>停止引擎：释放其全部内存。</translation>
    </message>
    <message>
        <source>Load</source>
        <translation>加载</translation>
    </message>
    <message>
        <source>Request</source>
        <translation>需求</translation>
    </message>
    <message>
        <source>Context</source>
        <translation>上下文</translation>
    </message>
    <message>
        <source>Parallel slots</source>
        <translation>并行槽位</translation>
    </message>
    <message>
        <source>KV cache type</source>
        <translation>KV 缓存类型</translation>
    </message>
    <message>
        <source>Speculation</source>
        <translation>推测解码</translation>
    </message>
    <message>
        <source>Task</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>GPU roles and order</source>
        <translation>GPU 角色与顺序</translation>
    </message>
    <message>
        <source>Predicted speed</source>
        <translation>预测速度</translation>
    </message>
    <message>
        <source>decode t/s</source>
        <translation>解码 t/s</translation>
    </message>
    <message>
        <source>prefill t/s</source>
        <translation>预填充 t/s</translation>
    </message>
    <message>
        <source>time to first token</source>
        <translation>首 token 时间</translation>
    </message>
    <message>
        <source>Where every byte goes</source>
        <translation>每个字节的去向</translation>
    </message>
    <message>
        <source>Warnings and reasons</source>
        <translation>警告与原因</translation>
    </message>
    <message>
        <source>What would make this faster</source>
        <translation>怎样能更快</translation>
    </message>
</context>
<context>
    <name>ServerPage</name>
    <message>
        <source>Waiting for a slot: {n}</source>
        <translation>等待空闲槽位：{n}</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>内存</translation>
    </message>
    <message>
        <source>Planned for the loaded models: {memory}</source>
        <translation>已加载模型的计划占用：{memory}</translation>
    </message>
    <message>
        <source>loaded</source>
        <translation>已加载</translation>
    </message>
    <message>
        <source>loading</source>
        <translation>加载中</translation>
    </message>
    <message>
        <source>on disk</source>
        <translation>在磁盘上</translation>
    </message>
    <message>
        <source>unloading</source>
        <translation>卸载中</translation>
    </message>
    <message>
        <source>idle</source>
        <translation>空闲</translation>
    </message>
    <message>
        <source>reading the prompt</source>
        <translation>读取提示</translation>
    </message>
    <message>
        <source>generating</source>
        <translation>生成中</translation>
    </message>
    <message>
        <source>Serving {model}.</source>
        <translation>正在提供 {model}。</translation>
    </message>
    <message>
        <source>The engine is starting…</source>
        <translation>引擎启动中…</translation>
    </message>
    <message>
        <source>The loaded model answers only this app until you turn the server on.</source>
        <translation>在打开服务器之前，已加载的模型只回应本应用。</translation>
    </message>
    <message>
        <source>Load a model from the Plan page to serve it.</source>
        <translation>请在“计划”页加载模型后再提供服务。</translation>
    </message>
    <message>
        <source>On this computer: {url}</source>
        <translation>本机：{url}</translation>
    </message>
    <message>
        <source>Not serving.</source>
        <translation>未提供服务。</translation>
    </message>
    <message>
        <source>From other devices: {url}</source>
        <translation>其他设备：{url}</translation>
    </message>
    <message>
        <source>Server</source>
        <translation>服务器</translation>
    </message>
    <message>
        <source>OpenAI-compatible server</source>
        <translation>兼容 OpenAI 的服务器</translation>
    </message>
    <message>
        <source>Serve the loaded model</source>
        <translation>提供已加载的模型</translation>
    </message>
    <message>
        <source>Port</source>
        <translation>端口</translation>
    </message>
    <message>
        <source>API key</source>
        <translation>API 密钥</translation>
    </message>
    <message>
        <source>Every model: the engine restarts serving the demo, Loadout&apos;s downloads, the folders added in Settings and other apps&apos; models (LM Studio, Ollama, the Hugging Face cache), each loaded on demand; the loaded model stays loaded for Chat.</source>
        <translation>所有模型：引擎将重新启动，提供演示模型、Loadout 的下载、在“设置”中添加的文件夹以及其他应用的模型（LM Studio、Ollama、Hugging Face 缓存），每个按需加载；已加载的模型保持加载，供聊天使用。</translation>
    </message>
    <message>
        <source>Any free port</source>
        <translation>任一空闲端口</translation>
    </message>
    <message>
        <source>Allow other devices on my network</source>
        <translation>允许我网络中的其他设备访问</translation>
    </message>
    <message>
        <source>Restarts the engine listening on every network interface; clients must then send the API key.</source>
        <translation>引擎将重启并监听所有网络接口；客户端必须发送 API 密钥。</translation>
    </message>
    <message>
        <source>For other devices</source>
        <translation>仅其他设备需要</translation>
    </message>
    <message>
        <source>New key</source>
        <translation>新密钥</translation>
    </message>
    <message>
        <source>Copy key</source>
        <translation>复制密钥</translation>
    </message>
    <message>
        <source>Address and examples</source>
        <translation>地址与示例</translation>
    </message>
    <message>
        <source>Copy URL</source>
        <translation>复制地址</translation>
    </message>
    <message>
        <source>Copy example</source>
        <translation>复制示例</translation>
    </message>
    <message>
        <source>Requests</source>
        <translation>请求</translation>
    </message>
    <message>
        <source>Slot</source>
        <translation>槽位</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Tokens held</source>
        <translation>占用 token</translation>
    </message>
    <message>
        <source>Generated</source>
        <translation>已生成</translation>
    </message>
    <message>
        <source>decode t/s, its answer</source>
        <translation>该回答的解码 t/s</translation>
    </message>
    <message>
        <source>Each slot answers one request at a time</source>
        <translation>每个槽位一次回答一个请求</translation>
    </message>
    <message>
        <source>Tokens of the prompt and answer its KV cache holds</source>
        <translation>其 KV 缓存中保存的提示和回答的 token 数</translation>
    </message>
    <message>
        <source>Tokens generated for this request so far</source>
        <translation>到目前为止为该请求生成的 token 数</translation>
    </message>
    <message>
        <source>This request&apos;s own decode speed, as the engine measures it (the chart below adds every request together)</source>
        <translation>该请求自己的解码速度，由引擎测量（下方图表把所有请求加在一起）</translation>
    </message>
    <message>
        <source>decode t/s, all requests</source>
        <translation>全部请求的解码 t/s</translation>
    </message>
    <message>
        <source>The tokens every request together decodes per second, over the last few seconds, as the engine measures it</source>
        <translation>全部请求合计每秒解码的 token 数（最近几秒），由引擎测得</translation>
    </message>
    <message>
        <source>Memory per device</source>
        <translation>各设备内存</translation>
    </message>
    <message>
        <source>Device</source>
        <translation>设备</translation>
    </message>
    <message>
        <source>Free</source>
        <translation>空闲</translation>
    </message>
    <message>
        <source>Total</source>
        <translation>总计</translation>
    </message>
    <message>
        <source>Models served</source>
        <translation>提供的模型</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Memory planned</source>
        <translation>计划内存</translation>
    </message>
    <message>
        <source>Predicted decode t/s</source>
        <translation>预测解码 t/s</translation>
    </message>
    <message>
        <source>What the plan of this model holds in memory, all devices together</source>
        <translation>此模型的计划在内存中占用的大小，所有设备合计</translation>
    </message>
    <message>
        <source>The decode speed its plan predicts on this machine</source>
        <translation>其计划在本机上预测的解码速度</translation>
    </message>
    <message>
        <source>Serving every model in the library.</source>
        <translation>正在提供模型库中的所有模型。</translation>
    </message>
    <message>
        <source>Serve</source>
        <translation>提供</translation>
    </message>
    <message>
        <source>this model</source>
        <translation>此模型</translation>
    </message>
    <message>
        <source>every model in the library</source>
        <translation>模型库中的所有模型</translation>
    </message>
    <message>
        <source>Which models to serve</source>
        <translation>要提供哪些模型</translation>
    </message>
    <message>
        <source>The loaded model is not in the library: it is served alone.</source>
        <translation>已加载的模型不在模型库中：仅单独提供此模型。</translation>
    </message>
</context>
<context>
    <name>SettingsPage</name>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>Model folders</source>
        <translation>模型文件夹</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <source>Theme</source>
        <translation>主题</translation>
    </message>
    <message>
        <source>Kept free on each GPU</source>
        <translation>每块 GPU 预留</translation>
    </message>
    <message>
        <source>Kept free in RAM</source>
        <translation>内存预留</translation>
    </message>
    <message>
        <source>Default task</source>
        <translation>默认任务</translation>
    </message>
    <message>
        <source>Log folder</source>
        <translation>日志文件夹</translation>
    </message>
    <message>
        <source>Add folder…</source>
        <translation>添加文件夹…</translation>
    </message>
    <message>
        <source>Also list other apps&apos; models</source>
        <translation>同时列出其他应用的模型</translation>
    </message>
    <message>
        <source>LM Studio&apos;s, Ollama&apos;s and the Hugging Face cache&apos;s, read only</source>
        <translation>LM Studio、Ollama 和 Hugging Face 缓存中的模型，只读</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Same as the system</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <source>Folder with GGUF models</source>
        <translation>存放 GGUF 模型的文件夹</translation>
    </message>
</context>
<context>
    <name>TaskStep</name>
    <message>
        <source>What will you use the model for? Models are rated per task, and the speed needed differs.</source>
        <translation>你打算用模型做什么？模型按任务评分，不同任务所需的速度也不同。</translation>
    </message>
    <message>
        <source>Questions, explanations, everyday conversation.</source>
        <translation>提问、讲解、日常对话。</translation>
    </message>
    <message>
        <source>Writing, reviewing and fixing code; wants more speed.</source>
        <translation>编写、审查和修复代码；需要更快的速度。</translation>
    </message>
    <message>
        <source>Tool calls and multi-step tasks; wants more speed and no very low-bit files.</source>
        <translation>工具调用和多步骤任务；需要更快的速度，且不宜使用极低位的量化文件。</translation>
    </message>
    <message>
        <source>Step-by-step reasoning with numbers.</source>
        <translation>涉及数字的逐步推理。</translation>
    </message>
    <message>
        <source>Stories, letters, brainstorming.</source>
        <translation>故事、信件、头脑风暴。</translation>
    </message>
</context>
<context>
    <name>WhatIfDialog</name>
    <message>
        <source>What if: edit the machine</source>
        <translation>假设：修改机器配置</translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>GPU to add</source>
        <translation>要添加的 GPU</translation>
    </message>
    <message>
        <source>Add GPU</source>
        <translation>添加 GPU</translation>
    </message>
    <message>
        <source>Remove selected</source>
        <translation>移除所选</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>内存</translation>
    </message>
    <message>
        <source>RAM bandwidth</source>
        <translation>内存带宽</translation>
    </message>
    <message>
        <source>Open rig file…</source>
        <translation>打开配置文件…</translation>
    </message>
    <message>
        <source>Save rig file…</source>
        <translation>保存配置文件…</translation>
    </message>
    <message>
        <source>Back to this machine</source>
        <translation>回到本机</translation>
    </message>
    <message>
        <source>Open a rig file</source>
        <translation>打开配置文件</translation>
    </message>
    <message>
        <source>Rig files (*.json)</source>
        <translation>配置文件 (*.json)</translation>
    </message>
    <message>
        <source>Save the rig file</source>
        <translation>保存配置文件</translation>
    </message>
</context>
</TS>
