"""Text, before any model: sentence splitting and windows, documents with offsets, and the
rules that find argument units in a document (``mining``) or match it against arguments
(``matching``)."""
