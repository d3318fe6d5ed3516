"""Chat models: the offline extractive model (:mod:`orc.models.offline`), the factory for real models
(:mod:`orc.models.factory`), metering and the request guard; embeddings (:mod:`orc.models.embeddings`).

Nothing is imported here: loading one of them (the embeddings' settings, say) does not load LangChain.
"""
