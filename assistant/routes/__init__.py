"""Thin HTTP controllers: validate, call a plain function, shape the response."""
