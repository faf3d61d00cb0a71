-- Knowledge registry K1: sources, immutable revisions and document snapshots on the shared package template
-- (0050). A revision also keeps its parsed KNOWLEDGE.yaml; the manifest's own file row stays in
-- knowledge_documents (it is part of the package identity) but is never listed as a document.

SELECT create_package_tables('knowledge_sources', 'knowledge_source_revisions', 'knowledge_documents');

ALTER TABLE knowledge_source_revisions ADD COLUMN manifest jsonb;
ALTER TABLE knowledge_source_revisions ADD CONSTRAINT knowledge_source_revisions_manifest_check
    CHECK (manifest IS NULL OR jsonb_typeof(manifest) = 'object');
