"""``python -m pipeline.registry [--write docs/reference.md]``: print the reference's tables of
the registry, or write them between the markers of docs/reference.md."""

import sys

from pipeline.registry.tables import conventions_table, write_conventions_table

if sys.argv[1:2] == ["--write"]:
    write_conventions_table(sys.argv[2] if len(sys.argv) > 2 else "docs/reference.md")
else:
    print(conventions_table(), end="")
