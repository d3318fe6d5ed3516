"""Search: spans cut from a document's text, the stored text and vectors, the lexical and vector indexes, and
the fusion of their rankings."""
