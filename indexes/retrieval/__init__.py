"""Hybrid retrieval: the retriever, fusion, filters, reranking, diversity, code questions, search processes."""
