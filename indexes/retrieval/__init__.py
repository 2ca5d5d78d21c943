"""Hybrid retrieval: the retriever, the ranking steps (fusion, the code prior, kinds, diversity), filters,
reranking, what is read from a question, search processes."""
