"""Durable steps (CONTRACT.md "Durable steps"): job.step, job.step_key, job.sleep and job.wait_for, recorded per job."""
