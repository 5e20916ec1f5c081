"""One module per query step. Each node is a small function `(state, config) -> partial update`."""
