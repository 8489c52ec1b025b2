"""Exports for BI: every job of a window as one row, in a Hive-style folder of daily
partitions (Parquet or CSV) that BigQuery, Spark and DuckDB read (decision 34). It reads
the read side's usage rows and writes files, never the database."""
