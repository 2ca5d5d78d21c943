"""The format readers parse.py dispatches to: HTML, reST, PDF (and its tables), text, tables, OCR, code."""
