"""docs/openapi.json is what the code serves; regenerate with ``python -m api.export``."""

from __future__ import annotations

import json

from api.export import DEFAULT_PATH, openapi_spec, render


def test_exported_spec_is_current() -> None:
    assert DEFAULT_PATH.read_text(encoding="utf-8") == render(), (
        "docs/openapi.json is stale: run `.venv/bin/python -m api.export`"
    )


def test_spec_documents_every_operation_and_auth() -> None:
    spec = openapi_spec()
    operations = {
        op["operationId"]: (path, method, op)
        for path, item in spec["paths"].items()
        for method, op in item.items()
    }
    assert set(operations) == {
        "localSearch",
        "search",
        "globalSearch",
        "getEntity",
        "getEntityNeighborhood",
        "listTemplates",
        "runTemplate",
        "answer",
        "query",
        "listNamespaces",
        "health",
    }
    assert spec["components"]["securitySchemes"]["BearerAuth"]["scheme"] == "bearer"
    for op_id, (_, _, op) in operations.items():
        assert op["tags"], op_id
        if op_id == "health":
            assert "security" not in op
        else:
            assert op["security"] == [{"BearerAuth": []}]
            assert {"401", "422", "503"} <= set(op["responses"]) or op_id in {
                "listTemplates",
                "listNamespaces",
            }
    json.dumps(spec)  # serializable as is
