"""Command-line modules that sit above every layer (they may import any of them); run.py
registers their commands."""
