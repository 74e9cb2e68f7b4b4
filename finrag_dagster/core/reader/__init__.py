"""The frozen reader (seed 000 §3.2, App. B): prompt, JSON schema, parser, backends, cache."""
