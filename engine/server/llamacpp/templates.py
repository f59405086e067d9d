"""Chat templates by name for ``--chat-template NAME`` (llama-server's built-in names),
written as Jinja for Loadout's renderer. Only the common formats are here; any other
name is refused with the list, and a Jinja template can always be given instead.
"""

from __future__ import annotations

# each message's content is a string once the server has checked the request
NAMED: dict[str, str] = {
    "chatml": (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"),
    "llama3": (
        "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
        "{{ m.content }}<|eot_id|>{% endfor %}"
        "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n"
        "{% endif %}"),
    "command-r": (
        "{% for m in messages %}<|START_OF_TURN_TOKEN|>"
        "{% if m.role == 'system' %}<|SYSTEM_TOKEN|>{% elif m.role == 'user' %}"
        "<|USER_TOKEN|>{% else %}<|CHATBOT_TOKEN|>{% endif %}"
        "{{ m.content }}<|END_OF_TURN_TOKEN|>{% endfor %}"
        "{% if add_generation_prompt %}<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>{% endif %}"),
}


def named_template(name: str) -> str | None:
    """The Jinja source of a built-in template name (None: not one of ours)."""
    return NAMED.get(name.strip().lower())
