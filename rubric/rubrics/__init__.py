"""Bundled rubric files (package data): one `<id>.toml` per rubric."""
