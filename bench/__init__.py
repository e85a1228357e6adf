"""Benchmarks: `python run.py bench` (load through the real phone endpoint) and `--prompts`
(prompt budgets and prefix-cache friendliness with the real Gemma tokenizer and model)."""
