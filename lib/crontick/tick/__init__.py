"""One tick, file by file: probe, claim, run (crontick.jobs.runner), record, then the duties after it (crontick.tick.duties); and the drain."""
