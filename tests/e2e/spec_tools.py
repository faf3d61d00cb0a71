"""The MCP tool names of spec/001 ("MCP Integration"), per endpoint, exactly as written there."""

SPEC_TOOLS: dict[str, list[str]] = {
    "todos": ["todo_create", "todo_get", "todo_list", "todo_update", "todo_delete", "todo_search"],
    "notes": ["note_create", "note_get", "note_list", "note_update", "note_append", "note_delete", "note_search"],
    "reports": ["report_create", "report_get", "report_list", "report_list_sources", "report_update",
                "report_delete"],
    "bookmarks": ["bookmark_create", "bookmark_get", "bookmark_list", "bookmark_update", "bookmark_delete"],
    "expenses": ["expense_create", "expense_get", "expense_list", "expense_summary", "expense_update",
                 "expense_delete"],
    "memory": [
        "memory_record", "memory_store", "memory_search", "memory_get", "memory_timeline", "memory_attribution",
        "memory_supersede", "memory_feedback", "memory_feedback_list", "memory_checkpoint_save", "memory_resume",
        "memory_working_session_create", "memory_working_session_list", "memory_working_session_get",
        "memory_working_session_update", "memory_working_session_delete", "memory_working_append",
        "memory_working_replay", "memory_working_item_delete",
    ],
    "skills": ["skill_log_add", "skill_logs_list", "skill_version_publish", "skill_version_get_active",
               "skill_source_sync", "skill_stats", "skill_signals", "skill_search", "skill_index_active",
               "skill_catalog_list", "skill_compile", "skill_version_instructions", "skill_version_resources",
               "skill_resource_get", "skill_quality_run", "skill_quality_get"],
    "context": ["context_pack"],
    # the registry tools so far; search, discovery and resolution tools join as they land (issue 12)
    "knowledge": ["knowledge_sources_list", "knowledge_source_sync", "knowledge_documents_list",
                  "knowledge_document_get", "knowledge_catalog_list", "knowledge_search", "knowledge_index_active",
                  "knowledge_document_links", "knowledge_discover", "knowledge_resolution_record",
                  "knowledge_resolutions_list", "knowledge_resolution_get",
                  "knowledge_compile", "knowledge_builds_list", "knowledge_build_get", "knowledge_build_pages",
                  "knowledge_page_get", "knowledge_build_diff", "knowledge_build_events", "knowledge_build_activate",
                  "knowledge_queue_stats", "knowledge_wiki_search", "knowledge_wiki_index", "knowledge_wiki_status"],
}
