"""The official OpenAI schemas of the Responses API, for validating what the server sends.

``tests/data/openai-responses-schemas.json`` holds the ``components.schemas`` of the
OpenAI OpenAPI document (openai/openai-openapi, MIT, licence in
``openai-api-schemas.LICENSE``) reachable from ``Response``, the Responses stream events
and ``ErrorResponse``. The document is OpenAPI 3.1, whose schemas are JSON Schema: no
rewriting is needed.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema

from tests.engine.server_fixtures import ROOT

SCHEMAS = ROOT / "tests" / "data" / "openai-responses-schemas.json"


@functools.cache
def _components() -> dict[str, Any]:
    doc = json.loads(SCHEMAS.read_text(encoding="utf-8"))
    components: dict[str, Any] = doc["components"]
    return components


def validate_openai(document: Any, schema_name: str) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``document`` fits the named schema."""
    root = {"$ref": f"#/components/schemas/{schema_name}", "components": _components()}
    jsonschema.Draft202012Validator(root).validate(document)
