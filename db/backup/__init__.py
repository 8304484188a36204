"""Backups of the whole study (`nmb backup`, `nmb restore`): `study.py` (what a backup holds
and the order of a restore), `archive.py` (the file, its manifest and its checks), `sqlite.py`
and `postgres.py` (a consistent copy of each database and its restore), `snapshot.py` (what
one view of the database references)."""

from db.backup.study import Restored, backup_study, restore_study

__all__ = ["Restored", "backup_study", "restore_study"]
