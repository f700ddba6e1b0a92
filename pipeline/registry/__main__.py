"""``python -m pipeline.registry``: print the reference's tables of the registry (``make
generate`` writes them into docs/reference.md)."""

from pipeline.registry.tables import conventions_table

print(conventions_table(), end="")
