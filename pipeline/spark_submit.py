"""The ``ndcg`` command for ``spark-submit``, which runs Python files, not modules (no ``-m``).

    spark-submit --master yarn $(python -c 'import pipeline.spark_submit as m; print(m.__file__)') \\
        evaluate --run s3a://logs/runs/ --qrels s3a://logs/qrels/ --k 10 --out s3a://eval/out/

The arguments are those of ``ndcg``; ``evaluate`` runs on the spark engine unless ``--engine``
says otherwise, in the SparkSession that spark-submit configured (master, executors, conf).
Executors need nothing installed: the work is Spark SQL, with no Python functions.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pipeline.cli import main


def spark_arguments(argv: Sequence[str]) -> list[str]:
    """``argv`` with ``--engine spark`` added to ``evaluate`` when no engine is named.

    >>> spark_arguments(["evaluate", "--run", "r"])
    ['evaluate', '--engine', 'spark', '--run', 'r']
    >>> spark_arguments(["evaluate", "--engine=polars"])
    ['evaluate', '--engine=polars']
    """
    arguments = list(argv)
    names_engine = any(a == "--engine" or a.startswith("--engine=") for a in arguments)
    if arguments[:1] == ["evaluate"] and not names_engine:
        arguments[1:1] = ["--engine", "spark"]
    return arguments


if __name__ == "__main__":
    sys.exit(main(spark_arguments(sys.argv[1:])))
