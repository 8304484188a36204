"""Every way data comes in, in one registry (`importers.registry`) that `nmb import`,
`nmb import-responses` and the admin page's import tab all read."""

from importers.registry import IMPORTERS, Importer, Options, checked, names, run_import

__all__ = ["IMPORTERS", "Importer", "Options", "checked", "names", "run_import"]
