"""One provider per layer. These modules are the context pack's read models: the only context modules that call
other domains' services (memory, todos, notes, working memory, skills). Each turns what it reads into ordered
``Candidate`` items; the service fits them to the layer budget."""
