"""Document services, in wings with one job each: ``parsing`` (bytes to text), ``intake`` (uploads, processing,
leases, recovery), ``catalog`` (contexts, availability, scopes, the document tools' library), ``chat``
(document_chat and its file cache) and ``sessions`` (a conversation's files); the catalog's records at the root.
Spans, stored text and search are :mod:`orc.search`'s. Import from the wings (this package re-exports nothing:
importing a wing must not pull in the others).
"""
