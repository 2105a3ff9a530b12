"""SQLite storage (apsw): schema and migrations, small sync queries, one async facade."""
