"""Language helpers shared by the offline model and the document services: tokens, sentences, ranking."""

from orc.text.ranking import Ranked, rank, split_sentences, tokenize

__all__ = ["Ranked", "rank", "split_sentences", "tokenize"]
