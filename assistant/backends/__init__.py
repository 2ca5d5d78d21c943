"""LLM backends: the protocol (base.py), the table of names (registry.py), one built from the settings (factory.py), and the built-in backends, each importing its heavy library only when built."""
