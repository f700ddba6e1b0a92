"""``ndcg report``: evaluation and comparison outputs -> one self-contained HTML file.

Needs matplotlib (the ``report`` extra: ``pip install -e '.[report]'`` from a checkout); nothing else in the package
imports this one, so the evaluation path never loads matplotlib.
"""

from pipeline.report.build import build_report

__all__ = ["build_report"]
