"""GET /templates and POST /templates/{name}: the named, read-only Cypher templates."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, PathParameter

from api.routes._docs import SECURED, errors
from kg import AsyncKnowledgeGraph, TemplateInfo, TemplateResult

TemplateName = Annotated[
    str, PathParameter(min_length=1, max_length=64, description="A name from GET /templates.")
]


class TemplateController(Controller):
    path = "/templates"
    tags = ["templates"]  # noqa: RUF012
    security = SECURED

    @get(
        "/",
        operation_id="listTemplates",
        summary="List templates",
        description="Every template's name, description, parameter schema and row cap.",
        responses=errors(),
    )
    async def list_templates(
        self, graph: NamedDependency[AsyncKnowledgeGraph]
    ) -> list[TemplateInfo]:
        return graph.templates()

    @post(
        "/{name:str}",
        operation_id="runTemplate",
        summary="Run a template",
        description=(
            "Runs the named template in a read transaction. The body is the template's "
            "parameters object; it is validated against the template's parameter model."
        ),
        status_code=200,
        responses=errors(404, 408, 413, 415, 422, 429, 504),
    )
    async def run_template(
        self,
        name: TemplateName,
        data: JSONBody[dict[str, Any]],
        graph: NamedDependency[AsyncKnowledgeGraph],
    ) -> TemplateResult:
        return await graph.run_template(name, data)
