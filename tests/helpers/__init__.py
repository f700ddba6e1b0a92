"""What test modules share beyond conftest.py's constants: the shared SparkSession and the S3
server (each rebuilt after a failure, so a failure stays in the test where it happened), and the
batching of many small cases into one Spark job. Test modules import from here, never from
each other."""
