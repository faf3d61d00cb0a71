-- Issue 20: a model-written page whose frontmatter the YAML loader refuses (2024-13-45, !!int 0x) is a lint
-- finding of its own instead of an exception that broke every later lint run.
ALTER TABLE knowledge_lint_findings DROP CONSTRAINT knowledge_lint_findings_rule_check;
ALTER TABLE knowledge_lint_findings ADD CONSTRAINT knowledge_lint_findings_rule_check CHECK (rule IN (
    'orphan_page', 'stale_citation', 'stale_cascade', 'recorded_contradiction', 'unlabelled_supersede',
    'entity_link_kind', 'uncovered_document', 'unreadable_frontmatter'));
