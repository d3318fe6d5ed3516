"""Language helpers shared by every ranking in orc: tokens, sentences and BM25.

One tokenizer (:mod:`orc.text.tokens`) and one BM25 (:mod:`orc.text.bm25`) serve the document search index,
document_chat, citations and the offline model alike.
"""

from orc.text.bm25 import Match, Postings, best, index_passages, score
from orc.text.ranking import Ranked, rank, rank_indexed, rank_tokenized
from orc.text.sentences import split_sentences
from orc.text.tokens import STOPWORDS, stem, tokenize

__all__ = [
    "STOPWORDS",
    "Match",
    "Postings",
    "Ranked",
    "best",
    "index_passages",
    "rank",
    "rank_indexed",
    "rank_tokenized",
    "score",
    "split_sentences",
    "stem",
    "tokenize",
]
