"""The web console: the glasses as the user sees them, the session as the model sees it, and /metrics."""
