"""Controllers, one per area of the API."""
