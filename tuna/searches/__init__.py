"""Searches in the database: the read side (:mod:`.query`) of what the driver records."""
