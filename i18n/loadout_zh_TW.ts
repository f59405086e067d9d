<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_TW">
<context>
    <name>AttachStrip</name>
    <message>
        <source>Attach images</source>
        <translation>附加圖片</translation>
    </message>
    <message>
        <source>Images ({patterns})</source>
        <translation>圖片 ({patterns})</translation>
    </message>
    <message>
        <source>Not a picture: {names}</source>
        <translation>不是圖片：{names}</translation>
    </message>
    <message>
        <source>Images going with the next question: {count}</source>
        <translation>隨下一個問題傳送的圖片：{count}</translation>
    </message>
    <message>
        <source>Attach image…</source>
        <translation>附加圖片…</translation>
    </message>
    <message>
        <source>Add a picture to the question (you can also paste one or drop it on the question box)</source>
        <translation>為問題新增圖片（也可以貼上圖片，或將其拖放到問題框中）</translation>
    </message>
    <message>
        <source>Remove images</source>
        <translation>移除圖片</translation>
    </message>
    <message>
        <source>Attach image</source>
        <translation>附加圖片</translation>
    </message>
</context>
<context>
    <name>ChatPage</name>
    <message>
        <source>New conversation</source>
        <translation>新對話</translation>
    </message>
    <message>
        <source>The model is loading…</source>
        <translation>模型載入中…</translation>
    </message>
    <message>
        <source>Unloading…</source>
        <translation>正在卸載…</translation>
    </message>
    <message>
        <source>The engine stopped (see the message above).</source>
        <translation>引擎已停止（見上方訊息）。</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>Conversations</source>
        <translation>對話</translation>
    </message>
    <message>
        <source>New</source>
        <translation>新增</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>刪除</translation>
    </message>
    <message>
        <source>System prompt and sampling: temperature {temperature}, top-p {top_p}, longest answer {max_tokens} tokens</source>
        <translation>系統提示詞與取樣：溫度 {temperature}，核取樣 {top_p}，回答最長 {max_tokens} 個詞元</translation>
    </message>
    <message>
        <source>An image</source>
        <translation>一張圖片</translation>
    </message>
    <message>
        <source>{model} does not read images, so the question was not sent. Remove the pictures to ask it, or load a model that reads images (the Models page marks them).</source>
        <translation>{model} 不能讀取圖片，因此問題沒有傳送。移除圖片即可提問，或載入一個能讀取圖片的模型（「模型」頁會標出）。</translation>
    </message>
    <message>
        <source>Last answer: {figures}</source>
        <translation>上一個回答：{figures}</translation>
    </message>
    <message>
        <source>Your question waits for the model to load; it is answered as soon as the model is ready.</source>
        <translation>你的問題正在等待模型載入；模型一就緒就會回答。</translation>
    </message>
    <message>
        <source>Your question waits: the engine stopped (see the message above). Load a model to have it answered.</source>
        <translation>你的問題正在等待：引擎已停止（見上方訊息）。載入一個模型即可得到回答。</translation>
    </message>
    <message>
        <source>Your question waits, but no model is loading. {why} It is answered as soon as a model is loaded; Stop withdraws it.</source>
        <translation>你的問題在等待，但沒有模型正在載入。{why}一旦有模型載入完成就會回答；按「停止」可撤回問題。</translation>
    </message>
    <message>
        <source>Preparing the model…</source>
        <translation>正在準備模型…</translation>
    </message>
    <message>
        <source>Not loaded: the reason is below</source>
        <translation>未載入：原因見下方</translation>
    </message>
    <message>
        <source>No model loaded: ask a question to load the last one, or load one from the Plan page.</source>
        <translation>未載入模型：提問即可載入上次的模型，或在「計畫」頁載入一個。</translation>
    </message>
    <message>
        <source>Ready: {model} answers</source>
        <translation>就緒：由 {model} 回答</translation>
    </message>
    <message>
        <source>System prompt</source>
        <translation>系統提示詞</translation>
    </message>
    <message>
        <source>Temperature</source>
        <translation>溫度</translation>
    </message>
    <message>
        <source>Top-p</source>
        <translation>核取樣 (top-p)</translation>
    </message>
    <message>
        <source>Longest answer (tokens)</source>
        <translation>最長回答（token 數）</translation>
    </message>
    <message>
        <source>Ask something… (Ctrl+Enter sends)</source>
        <translation>輸入問題…（Ctrl+Enter 傳送）</translation>
    </message>
    <message>
        <source>Question</source>
        <translation>問題</translation>
    </message>
    <message>
        <source>Conversation</source>
        <translation>對話</translation>
    </message>
    <message>
        <source>Live decode speed of this answer</source>
        <translation>本次回答的即時解碼速度</translation>
    </message>
    <message>
        <source>decode t/s, this answer</source>
        <translation>本次回答的解碼 t/s</translation>
    </message>
    <message>
        <source>This answer&apos;s decode t/s while it streams, as the engine measures it (other requests to the server are not counted)</source>
        <translation>本次回答串流輸出時的解碼 t/s，由引擎測得（不計伺服器上的其他請求）</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>傳送</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>重新產生</translation>
    </message>
    <message>
        <source>Edit last question</source>
        <translation>編輯上一個問題</translation>
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
        <translation>助理</translation>
    </message>
    <message>
        <source>Copy code</source>
        <translation>複製程式碼</translation>
    </message>
    <message>
        <source>TTFT {value}</source>
        <translation>首 token 延遲 {value}</translation>
    </message>
    <message>
        <source>prefill {value} t/s</source>
        <translation>預填充 {value} t/s</translation>
    </message>
    <message>
        <source>decode {value} t/s</source>
        <translation>解碼 {value} t/s</translation>
    </message>
    <message>
        <source>end-to-end {value} t/s</source>
        <translation>端到端 {value} t/s</translation>
    </message>
    <message>
        <source>{prompt} prompt tokens ({cached} cached), {generated} generated</source>
        <translation>提示 {prompt} 個 token（快取 {cached} 個），產生 {generated} 個</translation>
    </message>
    <message>
        <source>{count} image(s) of {tokens} tokens, encoded in {value} (inside TTFT)</source>
        <translation>{count} 張圖片，共 {tokens} 個 token，編碼用時 {value}（計入 TTFT）</translation>
    </message>
    <message>
        <source>acceptance {share} ({per_step} tokens per step)</source>
        <translation>接受率 {share}（每步 {per_step} 個 token）</translation>
    </message>
    <message>
        <source>The loop guard stopped this answer: it was repeating itself.</source>
        <translation>循環防護停止了此回答：它在不斷重複。</translation>
    </message>
    <message>
        <source>The loop guard saw this answer repeating itself and retried it with penalties.</source>
        <translation>循環防護發現此回答在重複，已加懲罰重試。</translation>
    </message>
    <message>
        <source>Stopped.</source>
        <translation>已停止。</translation>
    </message>
    <message>
        <source>Cut off: the answer failed before it ended.</source>
        <translation>已中斷：回答在結束前失敗了。</translation>
    </message>
    <message>
        <source>The answer failed: {error}</source>
        <translation>回答失敗：{error}</translation>
    </message>
</context>
<context>
    <name>ChooseStep</name>
    <message>
        <source>{name} (downloaded)</source>
        <translation>{name}（已下載）</translation>
    </message>
    <message>
        <source>{name} (needs the internet to download)</source>
        <translation>{name}（下載需要網路連線）</translation>
    </message>
    <message>
        <source>≈ {size} (estimate)</source>
        <translation>≈ {size}（估計）</translation>
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
        <translation>下載大小</translation>
    </message>
    <message>
        <source>Fits</source>
        <translation>放置情況</translation>
    </message>
    <message>
        <source>Decode t/s (predicted)</source>
        <translation>解碼 t/s（預測）</translation>
    </message>
    <message>
        <source>Context</source>
        <translation>上下文</translation>
    </message>
    <message>
        <source>{name} · {quant}: where every byte goes</source>
        <translation>{name} · {quant}：每個位元組的去向</translation>
    </message>
    <message>
        <source>{quality} quality ({bits:.1f} bits per weight), {size} to download, licence {licence}.</source>
        <translation>品質：{quality}（每個權重 {bits:.1f} 位元），下載 {size}，授權條款 {licence}。</translation>
    </message>
    <message>
        <source>Predicted here: decode {decode} t/s, prefill {prefill} t/s, time to first token {ttft}; context {context}.</source>
        <translation>本機預測：解碼 {decode} t/s，預填充 {prefill} t/s，首個 token 時間 {ttft}；上下文 {context}。</translation>
    </message>
    <message>
        <source>&lt;b&gt;Estimated offline&lt;/b&gt;: the size is the catalog&apos;s parameter count × {bits:.2f} bits per weight, and the speed is planned for a model of that size and shape. Downloading needs the internet.</source>
        <translation>&lt;b&gt;離線估計&lt;/b&gt;：大小為目錄中的參數量 × 每權重 {bits:.2f} 位元，速度依該大小與結構的模型規劃。下載需要網路連線。</translation>
    </message>
    <message>
        <source>&lt;b&gt;This model does not fit this machine.&lt;/b&gt; Pick a smaller one.</source>
        <translation>&lt;b&gt;此模型在這台機器上放不下。&lt;/b&gt;請選擇更小的模型。</translation>
    </message>
    <message>
        <source>All on GPU</source>
        <translation>全部在 GPU 上</translation>
    </message>
    <message>
        <source>Experts in RAM</source>
        <translation>專家在記憶體中</translation>
    </message>
    <message>
        <source>Partly in RAM</source>
        <translation>部分在記憶體中</translation>
    </message>
    <message>
        <source>In RAM (CPU)</source>
        <translation>在記憶體中（CPU）</translation>
    </message>
    <message>
        <source>Reads from disk (slow)</source>
        <translation>從磁碟讀取（慢）</translation>
    </message>
    <message>
        <source>Does not fit</source>
        <translation>放不下</translation>
    </message>
    <message>
        <source>Near-lossless</source>
        <translation>近乎無損</translation>
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
        <translation>普通</translation>
    </message>
    <message>
        <source>Low</source>
        <translation>低</translation>
    </message>
    <message>
        <source>About 3 bits per weight or fewer: answers get noticeably worse.</source>
        <translation>每個權重約 3 位元或更少：回答品質會明顯變差。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The model hub cannot be reached&lt;/b&gt;, so Loadout cannot list models to download. Check the internet connection (and proxy settings), then press Retry.</source>
        <translation>&lt;b&gt;無法連線至模型中心&lt;/b&gt;，因此 Loadout 無法列出可下載的模型。請檢查網路連線（以及代理伺服器設定），然後按「重試」。</translation>
    </message>
    <message>
        <source>&lt;b&gt;No model of the catalog could be judged.&lt;/b&gt; Press Retry; if it happens again, the details are in the log file.</source>
        <translation>&lt;b&gt;目錄中沒有任何模型能完成評估。&lt;/b&gt;請按「重試」；如果再次發生，詳細資訊請見記錄檔。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The recommendations could not be made:&lt;/b&gt; {detail}. Press Retry.</source>
        <translation>&lt;b&gt;無法產生推薦：&lt;/b&gt;{detail}。請按「重試」。</translation>
    </message>
    <message>
        <source>Planning every model of the catalog on this machine for {task}…</source>
        <translation>正在針對「{task}」在本機上規劃目錄中的每個模型…</translation>
    </message>
    <message>
        <source>Best first for {task}, estimated for this machine. Select one to see where it would go.</source>
        <translation>適合{task}的最佳選擇在前，依本機估計。選擇一個可查看它會放在哪裡。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The model hub cannot be reached.&lt;/b&gt; These are the catalog&apos;s models with estimated sizes and predicted speeds on this machine; downloading needs the internet. Check the connection, then press Retry.</source>
        <translation>&lt;b&gt;無法連線至模型中心。&lt;/b&gt;以下是目錄中的模型，附估計大小與在本機上的預測速度；下載需要網路連線。請檢查網路連線，然後按「重試」。</translation>
    </message>
    <message>
        <source>Best first for {task}, each planned on this machine. Select one to see where it would go.</source>
        <translation>依適合「{task}」的程度由佳到次排列，每個都已在本機上規劃。選擇一個即可查看它會放在哪裡。</translation>
    </message>
    <message>
        <source>Offline: sizes are from the hub&apos;s listing of {when}.</source>
        <translation>離線：大小取自模型中心 {when} 的清單。</translation>
    </message>
    <message>
        <source>Retry</source>
        <translation>重試</translation>
    </message>
</context>
<context>
    <name>ClusterSection</name>
    <message>
        <source>Cluster</source>
        <translation>叢集</translation>
    </message>
    <message>
        <source>Pool other computers&apos; GPUs (or RAM) with this one: each runs a worker, and its devices join the plan and the memory map.</source>
        <translation>將其他電腦的 GPU（或記憶體）與本機合併使用：每台電腦執行一個工作節點，其裝置會加入計畫與記憶體配置圖。</translation>
    </message>
    <message>
        <source>⚠ The RPC protocol has no authentication and no encryption: add workers on a trusted local network only.</source>
        <translation>⚠ 遠端程序呼叫協定既沒有身分驗證也沒有加密：只在受信任的區域網路中新增工作節點。</translation>
    </message>
    <message>
        <source>On the other computer, run:</source>
        <translation>在另一台電腦上執行：</translation>
    </message>
    <message>
        <source>Worker</source>
        <translation>工作節點</translation>
    </message>
    <message>
        <source>State</source>
        <translation>狀態</translation>
    </message>
    <message>
        <source>No workers: plans use this computer only.</source>
        <translation>沒有工作節點：計畫只使用本機。</translation>
    </message>
    <message>
        <source>Address, e.g. 192.168.1.7:50052</source>
        <translation>位址，例如 192.168.1.7:50052</translation>
    </message>
    <message>
        <source>Add</source>
        <translation>新增</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Check again</source>
        <translation>重新檢查</translation>
    </message>
    <message>
        <source>Checking…</source>
        <translation>正在檢查…</translation>
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
        <translation>{device}：可用 {free}，共 {total}</translation>
    </message>
    <message>
        <source>Reachable, {count} device(s): {devices}</source>
        <translation>可連線，{count} 個裝置：{devices}</translation>
    </message>
    <message>
        <source>Left out: it went away while the engine was using it. Start it again there, then check again.</source>
        <translation>已排除：引擎使用它時它中斷了。請在那台電腦上重新啟動它，然後重新檢查。</translation>
    </message>
    <message>
        <source>Unreachable: {reason}</source>
        <translation>無法連線：{reason}</translation>
    </message>
    <message>
        <source>nothing listens at that port (is the worker running?)</source>
        <translation>該連接埠上沒有程式在監聽（工作節點是否在執行？）</translation>
    </message>
    <message>
        <source>no answer in time (wrong address, or a firewall?)</source>
        <translation>未及時回應（位址錯誤，還是被防火牆阻擋？）</translation>
    </message>
    <message>
        <source>busy: it serves another Loadout now</source>
        <translation>忙碌：它正在為另一個 Loadout 服務</translation>
    </message>
    <message>
        <source>it speaks another protocol version (use the same Loadout version on both computers)</source>
        <translation>它使用的協定版本不同（請在兩台電腦上使用相同版本的 Loadout）</translation>
    </message>
    <message>
        <source>it answered, but not as a Loadout worker</source>
        <translation>它有回應，但不是 Loadout 工作節點</translation>
    </message>
    <message>
        <source>it serves no device</source>
        <translation>它沒有提供任何裝置</translation>
    </message>
    <message>
        <source>not a worker address</source>
        <translation>不是工作節點位址</translation>
    </message>
    <message>
        <source>cannot be reached ({detail})</source>
        <translation>無法連線（{detail}）</translation>
    </message>
    <message>
        <source>“{text}” is not a worker address. Write HOST:PORT, for example 192.168.1.7:50052 (the port is 50052 when left out).</source>
        <translation>「{text}」不是工作節點位址。請依 HOST:PORT 格式填寫，例如 192.168.1.7:50052（省略連接埠時為 50052）。</translation>
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
        <translation>輔助</translation>
    </message>
    <message>
        <source>Off</source>
        <translation>關閉</translation>
    </message>
    <message>
        <source>NVMe SSD</source>
        <translation>NVMe 固態硬碟</translation>
    </message>
    <message>
        <source>SSD</source>
        <translation>固態硬碟</translation>
    </message>
    <message>
        <source>Hard disk</source>
        <translation>傳統硬碟</translation>
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
        <translation>程式設計</translation>
    </message>
    <message>
        <source>Agent / tools</source>
        <translation>代理 / 工具呼叫</translation>
    </message>
    <message>
        <source>Math</source>
        <translation>數學</translation>
    </message>
    <message>
        <source>Creative writing</source>
        <translation>創意寫作</translation>
    </message>
    <message>
        <source>Automatic</source>
        <translation>自動</translation>
    </message>
    <message>
        <source>N-gram</source>
        <translation>N 元語法</translation>
    </message>
    <message>
        <source>Draft model</source>
        <translation>草稿模型</translation>
    </message>
    <message>
        <source>MTP heads</source>
        <translation>MTP 預測頭</translation>
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
        <translation>權重</translation>
    </message>
    <message>
        <source>Experts</source>
        <translation>專家</translation>
    </message>
    <message>
        <source>KV cache</source>
        <translation>KV 快取</translation>
    </message>
    <message>
        <source>Compute buffers</source>
        <translation>計算緩衝區</translation>
    </message>
    <message>
        <source>Vision projector</source>
        <translation>視覺投影器</translation>
    </message>
    <message>
        <source>Reserve</source>
        <translation>保留</translation>
    </message>
    <message>
        <source>Free</source>
        <translation>可用</translation>
    </message>
    <message>
        <source>Over capacity</source>
        <translation>超出容量</translation>
    </message>
    <message>
        <source>Loadout downloads</source>
        <translation>Loadout 下載</translation>
    </message>
    <message>
        <source>Hugging Face cache</source>
        <translation>Hugging Face 快取</translation>
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
        <translation>你的資料夾</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>記憶體</translation>
    </message>
    <message>
        <source>Disk</source>
        <translation>磁碟</translation>
    </message>
    <message>
        <source>It is a worker on this same machine: it would add no speed.</source>
        <translation>它是這台機器上的工作節點：不會帶來提速。</translation>
    </message>
    <message>
        <source>GPU {gpu} ({endpoint}) is a worker on this same machine: it shares this machine&apos;s cores and memory bandwidth.</source>
        <translation>GPU {gpu}（{endpoint}）是這台機器上的工作節點：它與本機共用 CPU 核心和記憶體頻寬。</translation>
    </message>
    <message>
        <source>Some layers run on GPU {gpu} at {endpoint}, over a {link_gbps} GB/s link ({link_latency_ms} ms latency): {transfer_ms_per_token} ms of transfers per token.</source>
        <translation>部分層在 {endpoint} 的 GPU {gpu} 上執行，經由 {link_gbps} GB/s 的連結（延遲 {link_latency_ms} ms）：每個 token 傳輸耗時 {transfer_ms_per_token} ms。</translation>
    </message>
    <message>
        <source>The model needs the remote GPU to fit.</source>
        <translation>模型需要遠端 GPU 才能放下。</translation>
    </message>
    <message>
        <source>The remote GPU makes it faster despite the network link.</source>
        <translation>儘管有網路連結開銷，遠端 GPU 仍能提速。</translation>
    </message>
    <message>
        <source>The {workers} remote workers are not used: this machine alone is as fast.</source>
        <translation>未使用 {workers} 個遠端工作節點：僅本機就同樣快。</translation>
    </message>
    <message>
        <source>Everything fits in GPU memory and RAM.</source>
        <translation>全部放得進顯示記憶體與記憶體。</translation>
    </message>
    <message>
        <source>Everything fits in RAM.</source>
        <translation>全部都能放進記憶體。</translation>
    </message>
    <message>
        <source>It fits only by reading part of the model from disk while it runs: expect a big slowdown.</source>
        <translation>只有在執行時從磁碟讀取部分模型才放得下：速度會大幅下降。</translation>
    </message>
    <message>
        <source>This model does not fit on this machine, not even read from disk.</source>
        <translation>此模型在這台機器上放不下，即使從磁碟讀取也不行。</translation>
    </message>
    <message>
        <source>The model is larger than all GPU memory and RAM together.</source>
        <translation>模型比全部顯示記憶體與記憶體加起來還大。</translation>
    </message>
    <message>
        <source>The weights fit, but the KV cache for this context does not.</source>
        <translation>權重放得下，但這個上下文長度的 KV 快取放不下。</translation>
    </message>
    <message>
        <source>There is no disk to read the rest of the model from.</source>
        <translation>沒有可供讀取模型其餘部分的磁碟。</translation>
    </message>
    <message>
        <source>It has the most free VRAM times bandwidth, so it holds the output layer and most layers.</source>
        <translation>它的可用顯示記憶體乘頻寬最大，因此承載輸出層與大部分層。</translation>
    </message>
    <message>
        <source>You chose it as the main GPU.</source>
        <translation>你將它設為主卡。</translation>
    </message>
    <message>
        <source>Sharing layers with it makes the whole faster.</source>
        <translation>與它分擔層能讓整體更快。</translation>
    </message>
    <message>
        <source>It is needed to keep weights out of RAM and off the disk.</source>
        <translation>需要它才能讓權重不進記憶體、不落到磁碟。</translation>
    </message>
    <message>
        <source>You chose it as a helper.</source>
        <translation>你將它設為輔助卡。</translation>
    </message>
    <message>
        <source>It has less than 8 GB, which costs more in transfers than it adds.</source>
        <translation>它不足 8 GB，傳輸開銷大於它帶來的效益。</translation>
    </message>
    <message>
        <source>Giving it a share would make the whole slower.</source>
        <translation>分給它一部分會讓整體變慢。</translation>
    </message>
    <message>
        <source>You switched it off.</source>
        <translation>你關閉了它。</translation>
    </message>
    <message>
        <source>Everything fits on the faster GPUs without it.</source>
        <translation>不用它，較快的 GPU 就能放下全部。</translation>
    </message>
    <message>
        <source>It drives a display, so more memory is kept free on it.</source>
        <translation>它連接著顯示器，因此在它上面多保留一些顯示記憶體。</translation>
    </message>
    <message>
        <source>All layers are on the GPU.</source>
        <translation>所有層都在 GPU 上。</translation>
    </message>
    <message>
        <source>The routed experts of some layers stay in RAM (the cheapest bytes to move).</source>
        <translation>部分層的路由專家留在記憶體中（移動它們代價最小）。</translation>
    </message>
    <message>
        <source>Some whole layers run on the CPU from RAM.</source>
        <translation>部分整層在 CPU 上從記憶體執行。</translation>
    </message>
    <message>
        <source>What RAM cannot hold stays on disk and is read from there: speed falls off a cliff.</source>
        <translation>記憶體放不下的部分留在磁碟上並從那裡讀取：速度會斷崖式下跌。</translation>
    </message>
    <message>
        <source>No usable GPU: the model runs on the CPU from RAM.</source>
        <translation>沒有可用的 GPU：模型在 CPU 上從記憶體執行。</translation>
    </message>
    <message>
        <source>The GPU shares memory with the CPU (unified memory).</source>
        <translation>GPU 與 CPU 共用記憶體（統一記憶體）。</translation>
    </message>
    <message>
        <source>The layer placement is the one you set.</source>
        <translation>層的配置依照你的設定。</translation>
    </message>
    <message>
        <source>The context is the one you asked for.</source>
        <translation>上下文長度依照你的要求。</translation>
    </message>
    <message>
        <source>The context is {context} tokens: the largest that fits in the memory left after the weights.</source>
        <translation>上下文為 {context} 個 token：放下權重後剩餘記憶體所能容納的最大值。</translation>
    </message>
    <message>
        <source>The context is capped at {train} tokens, the length the model was trained for.</source>
        <translation>上下文上限為 {train} 個 token，即模型的訓練長度。</translation>
    </message>
    <message>
        <source>Flash attention is off: on this CPU it reads the KV cache several times slower ({with_tps} t/s with it, {without_tps} t/s without, at {depth} tokens).</source>
        <translation>已關閉 Flash Attention：在這台 CPU 上它讀取 KV 快取要慢好幾倍（開啟時 {with_tps} t/s，關閉時 {without_tps} t/s，上下文 {depth} 個 token 時）。</translation>
    </message>
    <message>
        <source>Flash attention is on, as you chose.</source>
        <translation>已依您的選擇開啟 Flash Attention。</translation>
    </message>
    <message>
        <source>Flash attention is off, as you chose.</source>
        <translation>已依您的選擇關閉 Flash Attention。</translation>
    </message>
    <message>
        <source>llama.cpp cannot hold this model&apos;s KV cache as {kv_type}: its heads of {head_dim} values are not whole blocks of {block}. Choose f16 or Automatic for the KV cache.</source>
        <translation>llama.cpp 無法以 {kv_type} 保存此模型的 KV 快取：其 {head_dim} 維的注意力頭不是 {block} 元素區塊的整數倍。請將 KV 快取設為 f16 或自動。</translation>
    </message>
    <message>
        <source>Flash attention stays on: llama.cpp needs it for a {kv_type} KV cache.</source>
        <translation>Flash Attention 保持開啟：llama.cpp 使用 {kv_type} KV 快取時需要它。</translation>
    </message>
    <message>
        <source>GPU {gpu} ({name}) is a software device that computes on the CPU: speeds are not predicted for it.</source>
        <translation>GPU {gpu}（{name}）是在 CPU 上運算的軟體裝置：不預測它的速度。</translation>
    </message>
    <message>
        <source>Add RAM (to {ram_bytes}), so nothing is read from disk.</source>
        <translation>增加記憶體（到 {ram_bytes}），就不必從磁碟讀取。</translation>
    </message>
    <message>
        <source>Use a GPU with more memory ({vram_bytes}).</source>
        <translation>改用顯示記憶體更大的 GPU（{vram_bytes}）。</translation>
    </message>
    <message>
        <source>Add a second GPU (like a {gpu}).</source>
        <translation>再加一張 GPU（例如 {gpu}）。</translation>
    </message>
    <message>
        <source>Keep less RAM free in Settings: keeping {reserve_bytes} of the {ram_bytes} available leaves the model too little.</source>
        <translation>在「設定」中減少記憶體保留：可用的 {ram_bytes} 中保留 {reserve_bytes}，留給模型的太少。</translation>
    </message>
    <message>
        <source>The context is below 32K tokens because memory is short.</source>
        <translation>由於記憶體不足，上下文低於 32K 個 token。</translation>
    </message>
    <message>
        <source>The context is longer than the model was trained for (rope scaling).</source>
        <translation>上下文超過模型的訓練長度（RoPE 縮放）。</translation>
    </message>
    <message>
        <source>The context you asked for was capped at the training length.</source>
        <translation>你要求的上下文已被限制為訓練長度。</translation>
    </message>
    <message>
        <source>The KV cache is kept at full precision (f16).</source>
        <translation>KV 快取維持全精度（f16）。</translation>
    </message>
    <message>
        <source>The KV cache is q8_0 so that the weights stay on the GPU.</source>
        <translation>KV 快取使用 q8_0，以便權重留在 GPU 上。</translation>
    </message>
    <message>
        <source>The KV cache is q8_0 to make room for more context.</source>
        <translation>KV 快取使用 q8_0，為更長的上下文騰出空間。</translation>
    </message>
    <message>
        <source>The KV cache is q4_0 so that the weights stay on the GPU.</source>
        <translation>KV 快取使用 q4_0，以便權重留在 GPU 上。</translation>
    </message>
    <message>
        <source>The KV cache is q4_0 to make room for more context.</source>
        <translation>KV 快取使用 q4_0，為更長的上下文騰出空間。</translation>
    </message>
    <message>
        <source>The KV cache type is the one you chose.</source>
        <translation>KV 快取類型依照你的選擇。</translation>
    </message>
    <message>
        <source>Part of the KV cache is in RAM, which costs far more per byte than weights there.</source>
        <translation>部分 KV 快取在記憶體中，每位元組的代價遠高於放在那裡的權重。</translation>
    </message>
    <message>
        <source>This is the only quantization available.</source>
        <translation>這是唯一可用的量化版本。</translation>
    </message>
    <message>
        <source>This is the best quality that fits without reading from disk.</source>
        <translation>這是無需從磁碟讀取即可放下的最佳品質。</translation>
    </message>
    <message>
        <source>No quantization reaches a usable speed; this is the fastest.</source>
        <translation>沒有任何量化版本能達到可用速度；這是最快的。</translation>
    </message>
    <message>
        <source>At 3 bits or less, quality drops sharply for code and agent work.</source>
        <translation>在 3 位元以下，程式設計與代理任務的品質會急劇下降。</translation>
    </message>
    <message>
        <source>Few bits with a MoE model and MTP on is known to cause endless loops.</source>
        <translation>低位元量化加上 MoE 模型並開啟 MTP，已知會導致無限迴圈。</translation>
    </message>
    <message>
        <source>Speculation is off: it does not help creative writing.</source>
        <translation>推測解碼已關閉：它對創意寫作沒有幫助。</translation>
    </message>
    <message>
        <source>Speculation is off: its gain vanishes with several parallel slots.</source>
        <translation>推測解碼已關閉：多個平行槽位時其效益消失。</translation>
    </message>
    <message>
        <source>Speculation is off: it would not be faster here.</source>
        <translation>推測解碼已關閉：在這裡不會更快。</translation>
    </message>
    <message>
        <source>Speculation is off: its memory does not fit on the GPU.</source>
        <translation>推測解碼已關閉：其所需顯示記憶體在 GPU 上放不下。</translation>
    </message>
    <message>
        <source>Speculation is off for this kind of task.</source>
        <translation>此類任務關閉推測解碼。</translation>
    </message>
    <message>
        <source>The model&apos;s MTP heads draft tokens ahead.</source>
        <translation>由模型的 MTP 預測頭提前草擬 token。</translation>
    </message>
    <message>
        <source>N-gram lookup drafts tokens ahead.</source>
        <translation>由 N 元語法查找提前草擬 token。</translation>
    </message>
    <message>
        <source>A small draft model drafts tokens ahead.</source>
        <translation>由小型草稿模型提前草擬 token。</translation>
    </message>
    <message>
        <source>Speculation is set the way you chose.</source>
        <translation>推測解碼依照你的選擇設定。</translation>
    </message>
    <message>
        <source>MTP was asked for, but this model has no MTP heads.</source>
        <translation>要求使用 MTP，但此模型沒有 MTP 預測頭。</translation>
    </message>
    <message>
        <source>A draft model was asked for, but none is set.</source>
        <translation>要求使用草稿模型，但尚未設定。</translation>
    </message>
    <message>
        <source>Your setting is slower than the planner&apos;s choice.</source>
        <translation>你的設定比規劃器的選擇更慢。</translation>
    </message>
    <message>
        <source>Your placement does not fit on a device.</source>
        <translation>你的配置方案在某個裝置上放不下。</translation>
    </message>
    <message>
        <source>Your setting does not apply here and was ignored.</source>
        <translation>你的設定在此不適用，已忽略。</translation>
    </message>
    <message>
        <source>Decoding will be slow for interactive use.</source>
        <translation>解碼速度對互動使用來說會很慢。</translation>
    </message>
    <message>
        <source>Each parallel slot needs its own KV cache.</source>
        <translation>每個平行槽位都需要自己的 KV 快取。</translation>
    </message>
    <message>
        <source>Bottleneck: capacity. Part of the model is read from disk.</source>
        <translation>瓶頸：容量。部分模型從磁碟讀取。</translation>
    </message>
    <message>
        <source>Bottleneck: memory bandwidth. Each token reads every active weight.</source>
        <translation>瓶頸：記憶體頻寬。每個 token 都要讀取所有活躍權重。</translation>
    </message>
    <message>
        <source>Bottleneck: compute.</source>
        <translation>瓶頸：算力。</translation>
    </message>
    <message>
        <source>Bottleneck: fixed per-token costs.</source>
        <translation>瓶頸：每個 token 的固定開銷。</translation>
    </message>
    <message>
        <source>Bottleneck: transfers between devices.</source>
        <translation>瓶頸：裝置之間的傳輸。</translation>
    </message>
    <message>
        <source>Use a smaller quantization.</source>
        <translation>使用更小的量化版本。</translation>
    </message>
    <message>
        <source>Use a mixture-of-experts model: it reads only the active experts per token.</source>
        <translation>使用混合專家（MoE）模型：每個 token 只讀取活躍專家。</translation>
    </message>
    <message>
        <source>Ask for a shorter context.</source>
        <translation>要求更短的上下文。</translation>
    </message>
    <message>
        <source>Use a q8_0 KV cache.</source>
        <translation>使用 q8_0 KV 快取。</translation>
    </message>
    <message>
        <source>Use faster RAM (more channels or a higher clock).</source>
        <translation>使用更快的記憶體（更多通道或更高時脈）。</translation>
    </message>
    <message>
        <source>Nothing to change: this is as fast as this machine gets.</source>
        <translation>無需更改：這已是這台機器能達到的最快速度。</translation>
    </message>
</context>
<context>
    <name>DoneStep</name>
    <message>
        <source>✓ {name} is downloaded and verified.</source>
        <translation>✓ {name} 已下載並通過驗證。</translation>
    </message>
    <message>
        <source>{name} is downloaded but not verified: the hub gave no sha256 to check it against.</source>
        <translation>{name} 已下載，但未經驗證：模型站點沒有提供可用於核對它的 sha256。</translation>
    </message>
    <message>
        <source>Saved as {path}. It is listed on the Models page from now on.</source>
        <translation>已儲存為 {path}。今後它會列在「模型」頁中。</translation>
    </message>
    <message>
        <source>Load and chat</source>
        <translation>載入並聊天</translation>
    </message>
    <message>
        <source>Plan it for this machine, start the engine, then open the chat.</source>
        <translation>為本機規劃它、啟動引擎，然後開啟聊天。</translation>
    </message>
    <message>
        <source>See its plan first</source>
        <translation>先查看其計畫</translation>
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
        <translation>剩餘約 {eta}</translation>
    </message>
    <message>
        <source>Check again</source>
        <translation>重新檢查</translation>
    </message>
    <message>
        <source>Try again</source>
        <translation>重試</translation>
    </message>
    <message>
        <source>{size} into {folder} ({free} free on that disk). Every file is checked against the hub&apos;s sha256.</source>
        <translation>{size}，下載到 {folder}（該磁碟可用 {free}）。每個檔案都會與模型中心提供的 sha256 核對。</translation>
    </message>
    <message>
        <source>Checking the hub and the free disk space…</source>
        <translation>正在檢查模型中心與磁碟可用空間…</translation>
    </message>
    <message>
        <source>Ready to download.</source>
        <translation>可以開始下載。</translation>
    </message>
    <message>
        <source>Downloading… Pause (or closing this window) keeps what has arrived; Cancel removes it.</source>
        <translation>正在下載… 「暫停」（或關閉此視窗）會保留已下載的部分；「取消下載」會將其刪除。</translation>
    </message>
    <message>
        <source>Pausing…</source>
        <translation>正在暫停…</translation>
    </message>
    <message>
        <source>Paused at {done} of {total}. What was downloaded is kept: Resume continues from there, also after a restart.</source>
        <translation>已暫停於 {done} / {total}。已下載的部分會保留：按「繼續」即從該處接著下載，重新啟動後也可以。</translation>
    </message>
    <message>
        <source>Cancelling and removing the partial download…</source>
        <translation>正在取消並刪除未完成的下載…</translation>
    </message>
    <message>
        <source>Downloaded and verified.</source>
        <translation>已下載並通過驗證。</translation>
    </message>
    <message>
        <source>Downloaded, but not verified: the hub gave no sha256 to check the file against.</source>
        <translation>已下載，但未經驗證：模型站點沒有提供可用於核對該檔案的 sha256。</translation>
    </message>
    <message>
        <source>Cancelled: the partial download was removed.</source>
        <translation>已取消：未完成的下載已刪除。</translation>
    </message>
    <message>
        <source>&lt;b&gt;Not enough free disk space.&lt;/b&gt; This download needs {need} (and {margin} kept free) but only {free} is free in {folder}. Free some space, then press Check again.</source>
        <translation>&lt;b&gt;磁碟空間不足。&lt;/b&gt;此下載需要 {need}（另需保留 {margin}），但 {folder} 中只有 {free} 可用。請騰出一些空間，然後按「重新檢查」。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The model hub cannot be reached.&lt;/b&gt; Check the internet connection, then press Try again. What was downloaded so far is kept.</source>
        <translation>&lt;b&gt;無法連線至模型中心。&lt;/b&gt;請檢查網路連線，然後按「重試」。已下載的部分會保留。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The hub no longer has this file.&lt;/b&gt; Go back and pick another model.</source>
        <translation>&lt;b&gt;模型中心已不再提供此檔案。&lt;/b&gt;請返回並選擇其他模型。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The file did not match the hub&apos;s sha256&lt;/b&gt; and was removed. Press Try again to download it again.</source>
        <translation>&lt;b&gt;檔案與模型中心提供的 sha256 不符&lt;/b&gt;，已被刪除。按「重試」重新下載。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The hub gives no checksum (sha256) for this file&lt;/b&gt;, so the download cannot be checked: a corrupt or substituted file would go unnoticed. Nothing was downloaded. To take that risk, tick the box below and press Try again.</source>
        <translation>&lt;b&gt;模型中心沒有為此檔案提供校驗和（sha256）&lt;/b&gt;，因此無法校驗下載：損壞或被替換的檔案將無從察覺。未下載任何內容。若願意承擔此風險，請勾選下方的選項並按「重試」。</translation>
    </message>
    <message>
        <source>&lt;b&gt;This file is being downloaded elsewhere&lt;/b&gt; (another Loadout window or command). Wait for it, then press Try again.</source>
        <translation>&lt;b&gt;此檔案正在別處下載&lt;/b&gt;（另一個 Loadout 視窗或指令）。請等待其完成，然後按「重試」。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The download failed:&lt;/b&gt; {detail}. Press Try again.</source>
        <translation>&lt;b&gt;下載失敗：&lt;/b&gt;{detail}。請按「重試」。</translation>
    </message>
    <message>
        <source>{n} s</source>
        <translation>{n} 秒</translation>
    </message>
    <message>
        <source>{n} min</source>
        <translation>{n} 分鐘</translation>
    </message>
    <message>
        <source>{h} h {m} min</source>
        <translation>{h} 小時 {m} 分鐘</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>下載</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暫停</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>繼續</translation>
    </message>
    <message>
        <source>Cancel download</source>
        <translation>取消下載</translation>
    </message>
    <message>
        <source>Stop and remove what was downloaded.</source>
        <translation>停止並刪除已下載的部分。</translation>
    </message>
    <message>
        <source>Download even if the hub gives no checksum (risky: the file cannot be checked, and a corrupt or substituted file would go unnoticed)</source>
        <translation>即使模型中心未提供校驗和也下載（有風險：檔案無法校驗，損壞或被替換的檔案將無從察覺）</translation>
    </message>
</context>
<context>
    <name>EngineBanner</name>
    <message>
        <source>Loadout runs its CPU engine build: this computer has a GPU, but no engine build here can use it (its driver&apos;s runtime is missing, or Loadout has no build for it). Models run much more slowly on the CPU. Settings → Engine shows the builds.</source>
        <translation>Loadout 正在使用 CPU 引擎版本：這台電腦有 GPU，但這裡沒有可以使用它的引擎版本（缺少其驅動程式的執行階段，或 Loadout 沒有適用於它的版本）。模型在 CPU 上執行會慢得多。「設定 → 引擎」中列出了各個版本。</translation>
    </message>
    <message>
        <source>The engine stopped (exit code {code}): worker {workers} went away or stopped answering, and the answer ended there. Loadout is still running. Plan again without it, or start the worker again and check it in Settings → Cluster.</source>
        <translation>引擎已停止（結束碼 {code}）：工作節點 {workers} 已中斷或不再回應，回答到此為止。Loadout 仍在執行。請不用它重新規劃，或重新啟動該工作節點，並在「設定 → 叢集」中檢查它。</translation>
    </message>
    <message>
        <source>The engine stopped unexpectedly (exit code {code}); Loadout is still running. Its last log lines say why. A safer plan keeps more memory free (fewer layers on the GPU, smaller batches).</source>
        <translation>引擎意外停止（結束碼 {code}）；Loadout 仍在執行。下方是引擎最後的記錄，說明了原因。更安全的方案會留出更多空閒記憶體（GPU 上的層更少，批次更小）。</translation>
    </message>
    <message>
        <source>Retry with a safer plan</source>
        <translation>用更安全的方案重試</translation>
    </message>
    <message>
        <source>Plan again without {workers}</source>
        <translation>不用 {workers} 重新規劃</translation>
    </message>
    <message>
        <source>Dismiss</source>
        <translation>關閉</translation>
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
        <translation>下次啟動 Loadout 時生效。</translation>
    </message>
    <message>
        <source>Restart now</source>
        <translation>立即重新啟動</translation>
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
        <translation>Vulkan 可驅動的 GPU</translation>
    </message>
    <message>
        <source>chosen in Settings</source>
        <translation>在設定中選擇</translation>
    </message>
    <message>
        <source>chosen because {gpu} is present</source>
        <translation>因偵測到 {gpu} 而選擇</translation>
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
        <translation>找到了 GPU，但這裡沒有可以使用它的引擎版本（缺少其驅動程式的執行階段，或 Loadout 沒有適用於它的版本），因此模型只在 CPU 上執行，速度慢得多</translation>
    </message>
    <message>
        <source>Running now: {build} — {why}</source>
        <translation>目前執行：{build} — {why}</translation>
    </message>
    <message>
        <source>⚠ The {build} build chosen in Settings cannot run on this computer, so Loadout chose by itself.</source>
        <translation>⚠ 設定中選擇的 {build} 版本無法在這台電腦上執行，因此 Loadout 自行做了選擇。</translation>
    </message>
    <message>
        <source>Running now: the engine installed with Python (this start did not go through Loadout&apos;s launcher, which chooses among the builds).</source>
        <translation>目前執行：隨 Python 安裝的引擎（本次啟動沒有經過 Loadout 的啟動器，而正是啟動器在各版本之間做選擇）。</translation>
    </message>
    <message>
        <source>This installation has one engine build (checking it…).</source>
        <translation>此安裝只有一個引擎版本（正在檢查…）。</translation>
    </message>
    <message>
        <source>This installation has one engine build, and it cannot be loaded: {error}</source>
        <translation>此安裝只有一個引擎版本，且無法載入：{error}</translation>
    </message>
    <message>
        <source>with GPU offload to {gpus}</source>
        <translation>支援卸載到 GPU（{gpus}）</translation>
    </message>
    <message>
        <source>which finds no GPU here: models run on the CPU</source>
        <translation>在本機上找不到 GPU：模型在 CPU 上執行</translation>
    </message>
    <message>
        <source>This installation has one engine build: llama.cpp through llama-cpp-python {version}, {offload}.</source>
        <translation>此安裝只有一個引擎版本：llama.cpp（透過 llama-cpp-python {version}），{offload}。</translation>
    </message>
    <message>
        <source>Automatic (matches this computer&apos;s GPUs)</source>
        <translation>自動（配合這台電腦的 GPU）</translation>
    </message>
</context>
<context>
    <name>ErrorReporter</name>
    <message>
        <source>{name} cannot be read as a GGUF model ({detail}). If it was downloaded, it may be incomplete: download it again. Otherwise open a .gguf model file (for a model split in parts, its first part).</source>
        <translation>無法將 {name} 讀取為 GGUF 模型（{detail}）。如果它是下載的，可能沒有下載完整：請重新下載。否則請開啟一個 .gguf 模型檔案（分成多個部分的模型請開啟第一部分）。</translation>
    </message>
    <message>
        <source>The model file could not be found: {detail}</source>
        <translation>找不到模型檔案：{detail}</translation>
    </message>
    <message>
        <source>This file is not a GGUF model Loadout can read: {detail}</source>
        <translation>此檔案不是 Loadout 能讀取的 GGUF 模型：{detail}</translation>
    </message>
    <message>
        <source>Loadout cannot plan this model yet: {detail}</source>
        <translation>Loadout 暫時還無法規劃此模型：{detail}</translation>
    </message>
    <message>
        <source>The rig file is not valid: {detail}</source>
        <translation>配置檔無效：{detail}</translation>
    </message>
    <message>
        <source>Out of memory: {detail}</source>
        <translation>記憶體不足：{detail}</translation>
    </message>
    <message>
        <source>{detail}</source>
        <translation>{detail}</translation>
    </message>
    <message>
        <source>Permission denied: {detail}</source>
        <translation>權限不足：{detail}</translation>
    </message>
    <message>
        <source>A file could not be read or written: {detail}</source>
        <translation>無法讀取或寫入檔案：{detail}</translation>
    </message>
    <message>
        <source>Something went wrong ({kind}): {detail}</source>
        <translation>發生錯誤（{kind}）：{detail}</translation>
    </message>
    <message>
        <source>Loadout: something went wrong</source>
        <translation>Loadout：發生錯誤</translation>
    </message>
    <message>
        <source>Details are in the log file, in {folder}</source>
        <translation>詳細資訊請見記錄檔，位於 {folder}</translation>
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
        <translation>交給規劃器決定</translation>
    </message>
    <message>
        <source>No GPU: everything runs on the CPU.</source>
        <translation>沒有 GPU：全部在 CPU 上執行。</translation>
    </message>
    <message>
        <source>Earlier in the order (holds the first layers)</source>
        <translation>順序提前（承載前面的層）</translation>
    </message>
    <message>
        <source>Earlier in the order</source>
        <translation>順序提前</translation>
    </message>
    <message>
        <source>Later in the order</source>
        <translation>順序延後</translation>
    </message>
</context>
<context>
    <name>HomePage</name>
    <message>
        <source>This machine</source>
        <translation>本機</translation>
    </message>
    <message>
        <source>Detect again</source>
        <translation>重新偵測</translation>
    </message>
    <message>
        <source>What if…</source>
        <translation>假設…</translation>
    </message>
    <message>
        <source>Plan for an edited machine: add or remove GPUs, change RAM, open or save rig files</source>
        <translation>為修改後的機器做規劃：增刪 GPU、修改記憶體、開啟或儲存配置檔</translation>
    </message>
    <message>
        <source>Measure this machine</source>
        <translation>測量本機</translation>
    </message>
    <message>
        <source>Run a small model for about a minute, so that speed predictions learn this machine</source>
        <translation>用一個小模型執行約一分鐘，讓速度預測學習本機</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Stop measuring (the runs it already made still count)</source>
        <translation>停止測量（已完成的執行仍然計入）</translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Memory and CPU</source>
        <translation>記憶體與 CPU</translation>
    </message>
    <message>
        <source>Disks</source>
        <translation>磁碟</translation>
    </message>
    <message>
        <source>No GPU found: models run on the CPU from RAM.</source>
        <translation>未找到 GPU：模型在 CPU 上從記憶體執行。</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>VRAM free / total</source>
        <translation>顯示記憶體 可用 / 總計</translation>
    </message>
    <message>
        <source>Bandwidth</source>
        <translation>頻寬</translation>
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
        <translation>資料夾</translation>
    </message>
    <message>
        <source>Kind</source>
        <translation>類型</translation>
    </message>
    <message>
        <source>Read speed</source>
        <translation>讀取速度</translation>
    </message>
    <message>
        <source>Detecting hardware: CPU and RAM…</source>
        <translation>正在偵測硬體：CPU 與記憶體…</translation>
    </message>
    <message>
        <source>Detecting hardware: GPUs…</source>
        <translation>正在偵測硬體：GPU…</translation>
    </message>
    <message>
        <source>Detecting hardware: engine devices…</source>
        <translation>正在偵測硬體：引擎裝置…</translation>
    </message>
    <message>
        <source>Measuring RAM bandwidth…</source>
        <translation>正在測量記憶體頻寬…</translation>
    </message>
    <message>
        <source>Measuring what one CPU core computes…</source>
        <translation>正在測量單一 CPU 核心的計算速度…</translation>
    </message>
    <message>
        <source>Measuring GPU bandwidth…</source>
        <translation>正在測量 GPU 頻寬…</translation>
    </message>
    <message>
        <source>Measuring disk read speed…</source>
        <translation>正在測量磁碟讀取速度…</translation>
    </message>
    <message>
        <source>Detection finished.</source>
        <translation>偵測完成。</translation>
    </message>
    <message>
        <source>Detecting hardware…</source>
        <translation>正在偵測硬體…</translation>
    </message>
    <message>
        <source>Hardware not detected yet.</source>
        <translation>尚未偵測硬體。</translation>
    </message>
    <message>
        <source>Detected.</source>
        <translation>已偵測。</translation>
    </message>
    <message>
        <source>pick a model to see</source>
        <translation>選擇模型後顯示</translation>
    </message>
    <message>
        <source>RAM {available} available of {total} · {bandwidth} · {cpu}, {cores} cores / {threads} threads</source>
        <translation>記憶體 可用 {available}，共 {total} · {bandwidth} · {cpu}，{cores} 核心 / {threads} 執行緒</translation>
    </message>
    <message>
        <source>Measuring this machine: loading a small model…</source>
        <translation>正在測量本機：載入小模型…</translation>
    </message>
    <message>
        <source>Stopping the measurement…</source>
        <translation>正在停止測量…</translation>
    </message>
    <message>
        <source>Measuring this machine: run {run}, decode {decode} t/s, prefill {prefill} t/s…</source>
        <translation>正在測量本機：第 {run} 次執行，解碼 {decode} t/s，預填充 {prefill} t/s…</translation>
    </message>
    <message>
        <source>Measuring stopped.</source>
        <translation>測量已停止。</translation>
    </message>
    <message>
        <source>Measured {count} runs: decode {decode} t/s (median). Plans are now calibrated on {runs} runs on this machine.</source>
        <translation>已測量 {count} 次執行：解碼 {decode} t/s（中位數）。規劃現已根據本機的 {runs} 次執行校準。</translation>
    </message>
    <message>
        <source>Measuring failed: {error}</source>
        <translation>測量失敗：{error}</translation>
    </message>
</context>
<context>
    <name>LoadRefusal</name>
    <message>
        <source>{name} was not loaded. {why}</source>
        <translation>未載入 {name}。{why}</translation>
    </message>
    <message>
        <source>{name} was not loaded: it does not fit in this machine&apos;s memory. {why} Choose a smaller model or quantization on the Models page, or a shorter context on the Plan page.</source>
        <translation>未載入 {name}：本機記憶體放不下它。{why}請在「模型」頁選擇更小的模型或量化版本，或在「計畫」頁選擇更短的上下文。</translation>
    </message>
    <message>
        <source>{name} was not loaded: its plan is for the what-if rig. Go back to this machine on the Plan page to load it.</source>
        <translation>未載入 {name}：它的計畫針對假設的配置。請在「計畫」頁回到本機後再載入。</translation>
    </message>
    <message>
        <source>No model to load yet: choose one on the Models page (or the demo model); it loads once its plan is made.</source>
        <translation>還沒有可載入的模型：請在「模型」頁選擇一個（或示範模型）；計畫做好後就會載入。</translation>
    </message>
</context>
<context>
    <name>MachineStep</name>
    <message>
        <source>Still detecting this machine&apos;s hardware… The next step opens as soon as it is known.</source>
        <translation>仍在偵測本機硬體…偵測完成後即可進入下一步。</translation>
    </message>
    <message>
        <source>Models are recommended for the edited what-if rig below (Plan page).</source>
        <translation>將針對下方修改後的假設配置（「計畫」頁）推薦模型。</translation>
    </message>
    <message>
        <source>Models are recommended for this machine, as detected:</source>
        <translation>將針對偵測到的本機配置推薦模型：</translation>
    </message>
    <message>
        <source>{name}: {free} free of {total} VRAM, {bandwidth}</source>
        <translation>{name}：顯示記憶體可用 {free}，共 {total}，{bandwidth}</translation>
    </message>
    <message>
        <source>None: models run on the CPU, from RAM.</source>
        <translation>無：模型在 CPU 上從記憶體執行。</translation>
    </message>
    <message>
        <source>{available} available of {total}, {bandwidth}</source>
        <translation>可用 {available}，共 {total}，{bandwidth}</translation>
    </message>
    <message>
        <source>{cpu}, {cores} cores</source>
        <translation>{cpu}，{cores} 核心</translation>
    </message>
    <message>
        <source>{free} free in {folder}</source>
        <translation>{folder} 中可用 {free}</translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Memory (RAM)</source>
        <translation>記憶體</translation>
    </message>
    <message>
        <source>Processor</source>
        <translation>處理器</translation>
    </message>
    <message>
        <source>Disk for downloads</source>
        <translation>下載所在磁碟</translation>
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
        <translation>首頁</translation>
    </message>
    <message>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Plan</source>
        <translation>計畫</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>Server</source>
        <translation>伺服器</translation>
    </message>
    <message>
        <source>Settings</source>
        <translation>設定</translation>
    </message>
    <message>
        <source>{page} (Ctrl+{number})</source>
        <translation>{page}（Ctrl+{number}）</translation>
    </message>
    <message>
        <source>Pages</source>
        <translation>頁面</translation>
    </message>
    <message>
        <source>Model loading progress</source>
        <translation>模型載入進度</translation>
    </message>
    <message>
        <source>Engine: not loaded</source>
        <translation>引擎：未載入</translation>
    </message>
    <message>
        <source>Engine: loading {percent}%</source>
        <translation>引擎：載入中 {percent}%</translation>
    </message>
    <message>
        <source>Engine: ready</source>
        <translation>引擎：就緒</translation>
    </message>
    <message>
        <source>Engine: unloading</source>
        <translation>引擎：卸載中</translation>
    </message>
    <message>
        <source>Engine: stopped unexpectedly</source>
        <translation>引擎：意外停止</translation>
    </message>
    <message>
        <source>Engine: preparing to load</source>
        <translation>引擎：準備載入</translation>
    </message>
    <message>
        <source>Model: {name}</source>
        <translation>模型：{name}</translation>
    </message>
    <message>
        <source>none</source>
        <translation>無</translation>
    </message>
    <message>
        <source>Decode: {tps} t/s (last answer)</source>
        <translation>解碼：{tps} t/s（上一個回答）</translation>
    </message>
    <message>
        <source>The decode t/s of the last chat answer (live while it streams), as the engine measures it; the Server page charts all requests together</source>
        <translation>上一個聊天回答的解碼 t/s（串流輸出時即時更新），由引擎測得；伺服器頁面的圖表顯示全部請求的合計</translation>
    </message>
    <message>
        <source>VRAM in use: {used} / {total}</source>
        <translation>顯示記憶體使用：{used} / {total}</translation>
    </message>
    <message>
        <source>VRAM: none</source>
        <translation>顯示記憶體：無</translation>
    </message>
    <message>
        <source>RAM in use: {used} / {total}</source>
        <translation>記憶體使用：{used} / {total}</translation>
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
        <translation>層 {spans}</translation>
    </message>
    <message>
        <source>{used} of {capacity}</source>
        <translation>{used} / {capacity}</translation>
    </message>
    <message>
        <source>{size} · layers {spans}</source>
        <translation>{size} · 第 {spans} 層</translation>
    </message>
</context>
<context>
    <name>ModelWizard</name>
    <message>
        <source>Show recommendations</source>
        <translation>查看推薦</translation>
    </message>
    <message>
        <source>Use this model</source>
        <translation>使用此模型</translation>
    </message>
    <message>
        <source>Download this model</source>
        <translation>下載此模型</translation>
    </message>
    <message>
        <source>Next</source>
        <translation>下一步</translation>
    </message>
    <message>
        <source>Downloading needs the internet: the model hub cannot be reached.</source>
        <translation>下載需要網路連線：無法連線至模型中心。</translation>
    </message>
    <message>
        <source>Machine</source>
        <translation>機器</translation>
    </message>
    <message>
        <source>Task</source>
        <translation>任務</translation>
    </message>
    <message>
        <source>Choose</source>
        <translation>選擇</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>下載</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <source>Find a model for this machine</source>
        <translation>為本機尋找模型</translation>
    </message>
    <message>
        <source>This machine</source>
        <translation>本機</translation>
    </message>
    <message>
        <source>What is it for?</source>
        <translation>用來做什麼？</translation>
    </message>
    <message>
        <source>Recommended models</source>
        <translation>推薦模型</translation>
    </message>
    <message>
        <source>Ready to chat</source>
        <translation>可以開始聊天了</translation>
    </message>
    <message>
        <source>Back</source>
        <translation>上一步</translation>
    </message>
    <message>
        <source>Close</source>
        <translation>關閉</translation>
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
        <translation>選擇一個模型來規劃。要搜尋的資料夾在「設定」中指定。</translation>
    </message>
    <message>
        <source>Open a .gguf file…</source>
        <translation>開啟 .gguf 檔案…</translation>
    </message>
    <message>
        <source>Models found</source>
        <translation>找到的模型</translation>
    </message>
    <message>
        <source>Plan this model</source>
        <translation>規劃此模型</translation>
    </message>
    <message>
        <source>Look again</source>
        <translation>重新尋找</translation>
    </message>
    <message>
        <source>Find a model for this machine…</source>
        <translation>為本機尋找模型…</translation>
    </message>
    <message>
        <source>Models recommended for this machine&apos;s hardware, downloaded and ready to chat</source>
        <translation>依本機硬體推薦的模型，下載後即可聊天</translation>
    </message>
    <message>
        <source>Looking for models on disk…</source>
        <translation>正在磁碟上尋找模型…</translation>
    </message>
    <message>
        <source>Demo model (SmolLM2 135M Instruct, {size})</source>
        <translation>示範模型（SmolLM2 135M Instruct，{size}）</translation>
    </message>
    <message>
        <source>reads images</source>
        <translation>可讀圖片</translation>
    </message>
    <message>
        <source>⚠ cannot be read as a model</source>
        <translation>⚠ 無法作為模型讀取</translation>
    </message>
    <message>
        <source>opened from {folder}</source>
        <translation>開啟自 {folder}</translation>
    </message>
    <message>
        <source>Selected: {name}</source>
        <translation>已選擇：{name}</translation>
    </message>
    <message>
        <source>No model selected.</source>
        <translation>未選擇模型。</translation>
    </message>
    <message>
        <source>Open a GGUF model</source>
        <translation>開啟 GGUF 模型</translation>
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
        <translation>記憶體用量已由 llama.cpp 確認。</translation>
    </message>
    <message>
        <source>Memory corrected by llama.cpp&apos;s dry run ({devices}).</source>
        <translation>記憶體用量已依 llama.cpp 的試執行修正（{devices}）。</translation>
    </message>
    <message>
        <source>llama.cpp&apos;s dry run differs ({devices}).</source>
        <translation>llama.cpp 的試執行結果與計畫不同（{devices}）。</translation>
    </message>
    <message>
        <source>Pick a model on the Models page to see its plan.</source>
        <translation>在「模型」頁選擇一個模型以查看其計畫。</translation>
    </message>
    <message>
        <source>Waiting for this machine&apos;s hardware…</source>
        <translation>正在等待本機硬體資訊…</translation>
    </message>
    <message>
        <source>Fits. Context {context} per sequence × {parallel}, KV {kv}, speculation {spec}.</source>
        <translation>放得下。每個序列上下文 {context} × {parallel}，KV {kv}，推測解碼 {spec}。</translation>
    </message>
    <message>
        <source>{advice} → decode {tps} t/s</source>
        <translation>{advice} → 解碼 {tps} t/s</translation>
    </message>
    <message>
        <source>Working out what would make this faster…</source>
        <translation>正在計算怎樣能更快…</translation>
    </message>
    <message>
        <source>This machine, for comparison: decode {decode} t/s, prefill {prefill} t/s, time to first token {ttft}.</source>
        <translation>本機對比：解碼 {decode} t/s，預填充 {prefill} t/s，首個 token 時間 {ttft}。</translation>
    </message>
    <message>
        <source>No advice for this plan.</source>
        <translation>此計畫沒有建議。</translation>
    </message>
    <message>
        <source>This plan is for the what-if rig: go back to this machine to load the model.</source>
        <translation>此計畫針對假設的配置：回到本機才能載入模型。</translation>
    </message>
    <message>
        <source>This plan does not fit: change the request to load it.</source>
        <translation>此計畫放不下：請修改請求後再載入。</translation>
    </message>
    <message>
        <source>Load again</source>
        <translation>重新載入</translation>
    </message>
    <message>
        <source>No plan: the planner stopped with an error (see the message).</source>
        <translation>沒有計畫：規劃器因錯誤而停止（見提示訊息）。</translation>
    </message>
    <message>
        <source>Nominal figure, not predicted for a software device: {figure}</source>
        <translation>名義數值，軟體裝置的速度不作預測：{figure}</translation>
    </message>
    <message>
        <source>time to first token ({tokens}-token prompt)</source>
        <translation>首個 token 時間（{tokens} token 的提示）</translation>
    </message>
    <message>
        <source>Does not fit as asked, so it cannot be loaded: choose a shorter context here, or a smaller model or quantization on the Models page.</source>
        <translation>按要求放不下，因此無法載入：請在這裡選擇更短的上下文，或在「模型」頁選擇更小的模型或量化版本。</translation>
    </message>
    <message>
        <source>Runs only by reading from disk. Context {context} per sequence × {parallel}, KV {kv}, speculation {spec}.</source>
        <translation>只能靠從磁碟讀取來執行。每個序列上下文 {context} × {parallel}，KV {kv}，推測解碼 {spec}。</translation>
    </message>
    <message>
        <source>Reads images: {tokens} tokens each, time to first token with one image {ttft}.</source>
        <translation>可讀圖片：每張 {tokens} 個 token，附一張圖片時首個 token 用時 {ttft}。</translation>
    </message>
    <message>
        <source>Calibrated on one run on this machine. Raw prediction: decode {decode} t/s, prefill {prefill} t/s, time to first token {ttft}.</source>
        <translation>已根據本機的 1 次執行校準。原始預測：解碼 {decode} t/s，預填充 {prefill} t/s，首個 token 時間 {ttft}。</translation>
    </message>
    <message>
        <source>Calibrated on {runs} runs on this machine. Raw prediction: decode {decode} t/s, prefill {prefill} t/s, time to first token {ttft}.</source>
        <translation>已根據本機的 {runs} 次執行校準。原始預測：解碼 {decode} t/s，預填充 {prefill} t/s，首個 token 時間 {ttft}。</translation>
    </message>
    <message>
        <source>Auto</source>
        <translation>自動</translation>
    </message>
    <message>
        <source>Reading the model…</source>
        <translation>正在讀取模型…</translation>
    </message>
    <message>
        <source>Plan: {name}</source>
        <translation>計畫：{name}</translation>
    </message>
    <message>
        <source>Plan</source>
        <translation>計畫</translation>
    </message>
    <message>
        <source>For: what-if rig</source>
        <translation>對象：假設的配置</translation>
    </message>
    <message>
        <source>For: this machine</source>
        <translation>對象：本機</translation>
    </message>
    <message>
        <source>What if…</source>
        <translation>假設…</translation>
    </message>
    <message>
        <source>Back to this machine</source>
        <translation>回到本機</translation>
    </message>
    <message>
        <source>Start the engine with this plan, then chat or serve it.</source>
        <translation>依此方案啟動引擎，然後聊天或提供服務。</translation>
    </message>
    <message>
        <source>Unload</source>
        <translation>卸載</translation>
    </message>
    <message>
        <source>Stop the engine: frees all its memory.</source>
        <translation>停止引擎：釋放其全部記憶體。</translation>
    </message>
    <message>
        <source>Load</source>
        <translation>載入</translation>
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
        <translation>平行槽位</translation>
    </message>
    <message>
        <source>KV cache type</source>
        <translation>KV 快取類型</translation>
    </message>
    <message>
        <source>Speculation</source>
        <translation>推測解碼</translation>
    </message>
    <message>
        <source>Task</source>
        <translation>任務</translation>
    </message>
    <message>
        <source>GPU roles and order</source>
        <translation>GPU 角色與順序</translation>
    </message>
    <message>
        <source>Predicted speed</source>
        <translation>預測速度</translation>
    </message>
    <message>
        <source>decode t/s</source>
        <translation>解碼 t/s</translation>
    </message>
    <message>
        <source>prefill t/s</source>
        <translation>預填充 t/s</translation>
    </message>
    <message>
        <source>time to first token</source>
        <translation>首個 token 時間</translation>
    </message>
    <message>
        <source>Where every byte goes</source>
        <translation>每個位元組的去向</translation>
    </message>
    <message>
        <source>Warnings and reasons</source>
        <translation>警告與原因</translation>
    </message>
    <message>
        <source>What would make this faster</source>
        <translation>怎樣能更快</translation>
    </message>
</context>
<context>
    <name>ServerPage</name>
    <message>
        <source>Waiting for a slot: {n}</source>
        <translation>等待空閒槽位：{n}</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>記憶體</translation>
    </message>
    <message>
        <source>Planned for the loaded models: {memory}</source>
        <translation>已載入模型的計畫佔用：{memory}</translation>
    </message>
    <message>
        <source>loaded</source>
        <translation>已載入</translation>
    </message>
    <message>
        <source>loading</source>
        <translation>載入中</translation>
    </message>
    <message>
        <source>on disk</source>
        <translation>在磁碟上</translation>
    </message>
    <message>
        <source>unloading</source>
        <translation>卸載中</translation>
    </message>
    <message>
        <source>idle</source>
        <translation>閒置</translation>
    </message>
    <message>
        <source>reading the prompt</source>
        <translation>讀取提示</translation>
    </message>
    <message>
        <source>generating</source>
        <translation>產生中</translation>
    </message>
    <message>
        <source>Serving {model}.</source>
        <translation>正在提供 {model}。</translation>
    </message>
    <message>
        <source>The engine is starting…</source>
        <translation>引擎啟動中…</translation>
    </message>
    <message>
        <source>The loaded model answers only this app until you turn the server on.</source>
        <translation>在開啟伺服器之前，已載入的模型只回應本應用程式。</translation>
    </message>
    <message>
        <source>Load a model from the Plan page to serve it.</source>
        <translation>請在「計畫」頁載入模型後再提供服務。</translation>
    </message>
    <message>
        <source>On this computer: {url}</source>
        <translation>本機：{url}</translation>
    </message>
    <message>
        <source>Not serving.</source>
        <translation>未提供服務。</translation>
    </message>
    <message>
        <source>From other devices: {url}</source>
        <translation>其他裝置：{url}</translation>
    </message>
    <message>
        <source>Server</source>
        <translation>伺服器</translation>
    </message>
    <message>
        <source>OpenAI-compatible server</source>
        <translation>相容 OpenAI 的伺服器</translation>
    </message>
    <message>
        <source>Serve the loaded model</source>
        <translation>提供已載入的模型</translation>
    </message>
    <message>
        <source>Port</source>
        <translation>連接埠</translation>
    </message>
    <message>
        <source>API key</source>
        <translation>API 金鑰</translation>
    </message>
    <message>
        <source>Every model: the engine restarts serving the demo, Loadout&apos;s downloads, the folders added in Settings and other apps&apos; models (LM Studio, Ollama, the Hugging Face cache), each loaded on demand; the loaded model stays loaded for Chat.</source>
        <translation>所有模型：引擎將重新啟動，提供示範模型、Loadout 的下載、在「設定」中新增的資料夾以及其他應用程式的模型（LM Studio、Ollama、Hugging Face 快取），每個按需載入；已載入的模型保持載入，供聊天使用。</translation>
    </message>
    <message>
        <source>Any free port</source>
        <translation>任一空閒連接埠</translation>
    </message>
    <message>
        <source>Allow other devices on my network</source>
        <translation>允許我網路中的其他裝置存取</translation>
    </message>
    <message>
        <source>Restarts the engine listening on every network interface; clients must then send the API key.</source>
        <translation>引擎將重新啟動並監聽所有網路介面；用戶端必須傳送 API 金鑰。</translation>
    </message>
    <message>
        <source>For other devices</source>
        <translation>僅其他裝置需要</translation>
    </message>
    <message>
        <source>New key</source>
        <translation>新金鑰</translation>
    </message>
    <message>
        <source>Copy key</source>
        <translation>複製金鑰</translation>
    </message>
    <message>
        <source>Address and examples</source>
        <translation>位址與範例</translation>
    </message>
    <message>
        <source>Copy URL</source>
        <translation>複製位址</translation>
    </message>
    <message>
        <source>Copy example</source>
        <translation>複製範例</translation>
    </message>
    <message>
        <source>Requests</source>
        <translation>請求</translation>
    </message>
    <message>
        <source>Slot</source>
        <translation>槽位</translation>
    </message>
    <message>
        <source>State</source>
        <translation>狀態</translation>
    </message>
    <message>
        <source>Tokens held</source>
        <translation>佔用 token</translation>
    </message>
    <message>
        <source>Generated</source>
        <translation>已產生</translation>
    </message>
    <message>
        <source>decode t/s, its answer</source>
        <translation>該回答的解碼 t/s</translation>
    </message>
    <message>
        <source>Each slot answers one request at a time</source>
        <translation>每個槽位一次回答一個請求</translation>
    </message>
    <message>
        <source>Tokens of the prompt and answer its KV cache holds</source>
        <translation>其 KV 快取中保存的提示和回答的 token 數</translation>
    </message>
    <message>
        <source>Tokens generated for this request so far</source>
        <translation>到目前為止為該請求產生的 token 數</translation>
    </message>
    <message>
        <source>This request&apos;s own decode speed, as the engine measures it (the chart below adds every request together)</source>
        <translation>該請求自己的解碼速度，由引擎測量（下方圖表把所有請求加在一起）</translation>
    </message>
    <message>
        <source>decode t/s, all requests</source>
        <translation>全部請求的解碼 t/s</translation>
    </message>
    <message>
        <source>The tokens every request together decodes per second, over the last few seconds, as the engine measures it</source>
        <translation>全部請求合計每秒解碼的 token 數（最近幾秒），由引擎測得</translation>
    </message>
    <message>
        <source>Memory per device</source>
        <translation>各裝置記憶體</translation>
    </message>
    <message>
        <source>Device</source>
        <translation>裝置</translation>
    </message>
    <message>
        <source>Free</source>
        <translation>可用</translation>
    </message>
    <message>
        <source>Total</source>
        <translation>總計</translation>
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
        <translation>規劃記憶體</translation>
    </message>
    <message>
        <source>Predicted decode t/s</source>
        <translation>預測解碼 t/s</translation>
    </message>
    <message>
        <source>What the plan of this model holds in memory, all devices together</source>
        <translation>此模型的計畫在記憶體中佔用的大小，所有裝置合計</translation>
    </message>
    <message>
        <source>The decode speed its plan predicts on this machine</source>
        <translation>其計畫在本機上預測的解碼速度</translation>
    </message>
    <message>
        <source>Serving every model in the library.</source>
        <translation>正在提供模型庫中的所有模型。</translation>
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
        <translation>模型庫中的所有模型</translation>
    </message>
    <message>
        <source>Which models to serve</source>
        <translation>要提供哪些模型</translation>
    </message>
    <message>
        <source>The loaded model is not in the library: it is served alone.</source>
        <translation>已載入的模型不在模型庫中：僅單獨提供此模型。</translation>
    </message>
</context>
<context>
    <name>SettingsPage</name>
    <message>
        <source>Settings</source>
        <translation>設定</translation>
    </message>
    <message>
        <source>Model folders</source>
        <translation>模型資料夾</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>語言</translation>
    </message>
    <message>
        <source>Theme</source>
        <translation>主題</translation>
    </message>
    <message>
        <source>Kept free on each GPU</source>
        <translation>每張 GPU 保留</translation>
    </message>
    <message>
        <source>Kept free in RAM</source>
        <translation>記憶體保留</translation>
    </message>
    <message>
        <source>Default task</source>
        <translation>預設任務</translation>
    </message>
    <message>
        <source>Log folder</source>
        <translation>記錄檔資料夾</translation>
    </message>
    <message>
        <source>Add folder…</source>
        <translation>新增資料夾…</translation>
    </message>
    <message>
        <source>Also list other apps&apos; models</source>
        <translation>同時列出其他應用程式的模型</translation>
    </message>
    <message>
        <source>LM Studio&apos;s, Ollama&apos;s and the Hugging Face cache&apos;s, read only</source>
        <translation>LM Studio、Ollama 和 Hugging Face 快取中的模型，唯讀</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Same as the system</source>
        <translation>跟隨系統</translation>
    </message>
    <message>
        <source>Light</source>
        <translation>淺色</translation>
    </message>
    <message>
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <source>Folder with GGUF models</source>
        <translation>存放 GGUF 模型的資料夾</translation>
    </message>
</context>
<context>
    <name>TaskStep</name>
    <message>
        <source>What will you use the model for? Models are rated per task, and the speed needed differs.</source>
        <translation>你打算用模型做什麼？模型依任務評分，不同任務所需的速度也不同。</translation>
    </message>
    <message>
        <source>Questions, explanations, everyday conversation.</source>
        <translation>提問、解說、日常對話。</translation>
    </message>
    <message>
        <source>Writing, reviewing and fixing code; wants more speed.</source>
        <translation>撰寫、審查與修正程式碼；需要更快的速度。</translation>
    </message>
    <message>
        <source>Tool calls and multi-step tasks; wants more speed and no very low-bit files.</source>
        <translation>工具呼叫與多步驟任務；需要更快的速度，且不宜使用極低位元的量化檔案。</translation>
    </message>
    <message>
        <source>Step-by-step reasoning with numbers.</source>
        <translation>涉及數字的逐步推理。</translation>
    </message>
    <message>
        <source>Stories, letters, brainstorming.</source>
        <translation>故事、信件、腦力激盪。</translation>
    </message>
</context>
<context>
    <name>WhatIfDialog</name>
    <message>
        <source>What if: edit the machine</source>
        <translation>假設：修改機器配置</translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>GPU to add</source>
        <translation>要新增的 GPU</translation>
    </message>
    <message>
        <source>Add GPU</source>
        <translation>新增 GPU</translation>
    </message>
    <message>
        <source>Remove selected</source>
        <translation>移除所選</translation>
    </message>
    <message>
        <source>RAM</source>
        <translation>記憶體</translation>
    </message>
    <message>
        <source>RAM bandwidth</source>
        <translation>記憶體頻寬</translation>
    </message>
    <message>
        <source>Open rig file…</source>
        <translation>開啟配置檔…</translation>
    </message>
    <message>
        <source>Save rig file…</source>
        <translation>儲存配置檔…</translation>
    </message>
    <message>
        <source>Back to this machine</source>
        <translation>回到本機</translation>
    </message>
    <message>
        <source>Open a rig file</source>
        <translation>開啟配置檔</translation>
    </message>
    <message>
        <source>Rig files (*.json)</source>
        <translation>配置檔 (*.json)</translation>
    </message>
    <message>
        <source>Save the rig file</source>
        <translation>儲存配置檔</translation>
    </message>
</context>
</TS>
