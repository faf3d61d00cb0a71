"""The ``/mcp/skills`` ToolSet, filled by ``records.py`` and ``registry.py`` (imported in that order by the package:
the order of the tool list)."""

from agentmate.mcp.registry import ToolSet

tools = ToolSet(
    "skills",
    instructions=(
        "Skill execution records of the account that owns the API key: log each run of a skill "
        "(skill_log_add), publish SKILL.md versions and read the active one, and read per-skill stats and "
        "improvement signals. Reading needs skills:r, writing skills:rw. outcome is one of success, failure, "
        "partial, user_corrected. Bind a log to skill_version_id (from skill_version_get_active) so memory "
        "attribution and quality telemetry can use it. To find and load a skill: skill_search (or "
        "skill_catalog_list) → skill_version_instructions → skill_version_resources / skill_resource_get."
    ),
)
