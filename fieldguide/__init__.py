"""fieldguide: answers questions about a product from its own Markdown docs."""

__version__ = "0.1.0"
