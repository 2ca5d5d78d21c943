"""Full-text search: FTS5 rows and BM25, the CJK trigram side, PostgreSQL's own, a replica's copy."""
