"""One tick, file by file: probe, claim, run (crontick.jobs.runner), record, then upkeep (alerts, retention, health); and the drain."""
