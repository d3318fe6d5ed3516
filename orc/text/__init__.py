"""Language helpers shared by the offline model and the document services: tokens, sentences, ranking."""

from orc.text.ranking import Ranked, rank, rank_tokenized, split_sentences, tokenize

__all__ = ["Ranked", "rank", "rank_tokenized", "split_sentences", "tokenize"]
