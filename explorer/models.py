"""Models for uploaded graphs, jobs and their artifacts (none yet)."""
