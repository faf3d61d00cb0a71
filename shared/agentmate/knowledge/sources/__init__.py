"""Knowledge sources: registering git/local sources, sync and snapshot ingest, revisions and documents."""
