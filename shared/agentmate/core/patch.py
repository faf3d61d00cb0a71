"""PATCH bodies: one rule for every update, over REST and MCP alike.

- Only the fields sent change; an omitted field stays as it is.
- ``null`` clears a field only where the model lists it in ``nullable`` (``due_date``, ``source`` …); on any
  other field it is a 400 naming the field, and the JSON schema says so (the field is optional but not
  nullable). No field states a ``default``: a client that fills in defaults must not send ``null`` (= clear)
  for a field it meant to leave alone.
- ``clear_<field>`` (the MCP tools' flag for clients that cannot send ``null``) is not a PATCH field: sent to
  REST it is refused with a hint to send ``<field>: null``.
- An empty PATCH changes nothing and is a 400 listing the updatable fields (``minProperties: 1``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

NOT_NULL_MESSAGE = "may not be null: omit the field to leave it unchanged"


def not_nullable(prop: dict[str, Any]) -> dict[str, Any]:
    """``prop`` without its ``null`` alternative and without ``default: null``."""
    prop = {k: v for k, v in prop.items() if not (k == "default" and v is None)}
    options = prop.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1:
            del prop["anyOf"]
            prop = {**kept[0], **prop}
        else:
            prop["anyOf"] = kept
    elif isinstance(prop.get("type"), list):
        prop["type"] = [t for t in prop["type"] if t != "null"]
    return prop


def patch_property(prop: dict[str, Any], nullable: bool) -> dict[str, Any]:
    """A PATCH field's JSON schema: non-nullable unless it clears, and never a ``default`` (omitted = unchanged)."""
    prop = prop if nullable else not_nullable(prop)
    return {k: v for k, v in prop.items() if k != "default"}


def _patch_schema(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    nullable: frozenset[str] = getattr(cls, "nullable", frozenset())
    props = schema.get("properties", {})
    for name, field in cls.model_fields.items():
        key = field.alias or name
        if key in props:
            props[key] = patch_property(props[key], name in nullable)
    schema["minProperties"] = 1


def _literal_values(annotation: Any) -> list[Any]:
    """The values of a ``Literal`` (inside ``Optional``/``Annotated``), so a refused null can list them."""
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    for arg in get_args(annotation):
        found = _literal_values(arg)
        if found:
            return found
    return []


class PatchModel(BaseModel):
    """Base of every PATCH body (see the module docstring). Subclasses list the fields ``null`` clears."""

    nullable: ClassVar[frozenset[str]] = frozenset()
    field_hints: ClassVar[dict[str, str]] = {}
    model_config = ConfigDict(extra="forbid", json_schema_extra=_patch_schema)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # The MCP tools' clear_<field> flags are spelt as null here (core.validation adds the hint).
        cls.field_hints = {
            **{f"clear_{name}": f"send {name}: null to clear it" for name in cls.nullable},
            **cls.field_hints,
        }

    @model_validator(mode="before")
    @classmethod
    def _not_empty(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data:
            fields = cls.updatable()
            raise PydanticCustomError(
                "empty_patch",
                "an empty PATCH changes nothing: send at least one of {fields}",
                {"fields": ", ".join(fields), "allowed": fields},
            )
        return data

    @field_validator("*", mode="before")
    @classmethod
    def _null_only_where_it_clears(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None and info.field_name not in cls.nullable:
            allowed = _literal_values(cls.model_fields[info.field_name].annotation) if info.field_name else []
            raise PydanticCustomError(
                "not_nullable", NOT_NULL_MESSAGE, {"allowed": allowed} if allowed else None
            )
        return value

    @classmethod
    def updatable(cls) -> list[str]:
        return [field.alias or name for name, field in cls.model_fields.items()]

    def changes(self) -> dict[str, Any]:
        """The fields sent, with their validated values (``None`` = clear)."""
        return self.model_dump(exclude_unset=True)
