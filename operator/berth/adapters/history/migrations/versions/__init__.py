"""Migration revisions of the history store, oldest first."""
