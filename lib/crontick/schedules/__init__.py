"""Recurring schedules: declarations, their cron slots, and the tick step that enqueues due slots."""
