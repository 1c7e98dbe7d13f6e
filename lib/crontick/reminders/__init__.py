"""Booking reminders, due in a window before each booking and sent once through crontick.channels."""
