"""Durable state in an embedded SQLite database (WAL): session journals, ownership."""
