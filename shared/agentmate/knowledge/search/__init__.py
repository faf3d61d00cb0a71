"""The chunk index of knowledge documents and search over it (vector + BM25 legs, document links)."""
