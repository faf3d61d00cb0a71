"""Wiki compiler K3 (spec/001 "Wiki compiler (K3)", "Wiki retrieval (K3.6)"): profile versions, immutable builds
with provenance, the compile pipeline over an OpenAI-compatible chat model (``agentmate.llm``), the check gate,
activate/rollback, diff, events, incremental compilation and wiki retrieval."""
