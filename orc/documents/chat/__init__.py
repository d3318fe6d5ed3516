"""document_chat: answering (or gathering evidence) over a conversation's named documents, with its file cache."""
