"""run.py eval: measured model behaviour (scenarios, router)."""
