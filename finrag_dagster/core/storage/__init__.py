"""Storage: table schemas and their catalog, the parquet lake (atomic, schema-checked writes), the SQL models."""
