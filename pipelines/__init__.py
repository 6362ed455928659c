"""The Ray layer: recipes become Ray Data plans; the CLI and, later, the status service live here."""
