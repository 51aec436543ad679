"""Reports: the terminal UI (live, from events), Markdown debug logs, JSON and JUnit XML."""
