"""Several runtime nodes on one PostgreSQL (docs/several-nodes.md): a throwaway database server
for tests and `run.py cluster`, and the commands that start and stop a cluster."""
