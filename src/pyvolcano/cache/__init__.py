"""The scheduler cache (cluster state between sessions) and the snapshot a session opens on."""
