"""The job queue: enqueue, the handler registry, the built-in job types, the runner and the values a handler sees."""
