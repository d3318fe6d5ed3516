"""The catalog: the context tree, context documents, the availability model, scopes, and the document tools'
library (listing, analysis, content, summaries and search over what a scope makes available)."""
