"""`make chaos`: crontick's guarantees checked against real processes, printed as a table."""
