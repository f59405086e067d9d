"""Copy-paste examples for the server panel, with the real base URL, key and model."""

from __future__ import annotations

import json


def curl_snippet(base_url: str, api_key: str | None, model: str) -> str:
    """A streaming ``curl`` request."""
    body = json.dumps({"model": model, "stream": True,
                       "messages": [{"role": "user", "content": "Hello!"}]})
    lines = [f"curl {base_url}/chat/completions \\",
             '  -H "Content-Type: application/json" \\']
    if api_key:
        lines.append(f'  -H "Authorization: Bearer {api_key}" \\')
    lines.append(f"  -d '{body}'")
    return "\n".join(lines)


def python_snippet(base_url: str, api_key: str | None, model: str) -> str:
    """The official ``openai`` Python client, streaming."""
    return "\n".join([
        "from openai import OpenAI",
        "",
        f'client = OpenAI(base_url="{base_url}", api_key="{api_key or "none"}")',
        "stream = client.chat.completions.create(",
        f'    model="{model}",',
        '    messages=[{"role": "user", "content": "Hello!"}],',
        "    stream=True,",
        ")",
        "for chunk in stream:",
        '    print(chunk.choices[0].delta.content or "", end="", flush=True)',
    ])


def javascript_snippet(base_url: str, api_key: str | None, model: str) -> str:
    """``fetch`` from JavaScript (browser or Node 18+), without streaming."""
    headers = ['    "Content-Type": "application/json",']
    if api_key:
        headers.append(f'    "Authorization": "Bearer {api_key}",')
    return "\n".join([
        f'const response = await fetch("{base_url}/chat/completions", {{',
        '  method: "POST",',
        "  headers: {",
        *headers,
        "  },",
        "  body: JSON.stringify({",
        f'    model: "{model}",',
        '    messages: [{ role: "user", content: "Hello!" }],',
        "  }),",
        "});",
        "const answer = await response.json();",
        "console.log(answer.choices[0].message.content);",
    ])


def snippets(base_url: str, api_key: str | None, model: str) -> dict[str, str]:
    """Every example, by language name."""
    return {"curl": curl_snippet(base_url, api_key, model),
            "Python": python_snippet(base_url, api_key, model),
            "JavaScript": javascript_snippet(base_url, api_key, model)}
