"""The OpenAI-compatible API (/v1): its request and response shapes, chat completions and embeddings over answers/."""
