"""Answers: a question -> retrieval -> a prompt that fits -> the backend -> cited events; conversations, summaries, question files."""
