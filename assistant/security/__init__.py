"""Who may do what and what gets out: API keys and the one access decision, browser defences, limits, redaction, uploads, input bounds."""
