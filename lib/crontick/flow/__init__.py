"""Flow control's claim side (CONTRACT.md "Flow control"): rate limits declared in code, and what the claim needs from code."""
