"""Agentmate: a multi-tenant backend as toolset for AI agents."""

import warnings as _warnings

from pydantic import BaseModel as _BaseModel
from pydantic.warnings import UnsupportedFieldAttributeWarning as _UnsupportedFieldAttributeWarning

# Cold start (issue 9, docs/benchmarks.md): by default pydantic compiles every model's validator and serializer
# when the class is created, and FastAPI compiles another pair per route parameter and response model (a
# TypeAdapter of `Annotated[Model, FieldInfo]`, which copies the whole model tree). A Lambda environment serves
# a few of its group's routes, and never the OpenAPI models FastAPI defines, so building on first use is about
# 10% of a function's import. This runs before anything imports FastAPI (every entry point imports `agentmate`
# first) and applies to every model that does not set `defer_build` itself; validation is unchanged.
_BaseModel.model_config["defer_build"] = True
# FastAPI silences this warning while it builds a parameter's TypeAdapter (its FieldInfo carries route-level
# attributes such as the body's alias); a deferred adapter is built later, outside that block.
_warnings.filterwarnings(
    "ignore", category=_UnsupportedFieldAttributeWarning, module="pydantic._internal._generate_schema"
)
