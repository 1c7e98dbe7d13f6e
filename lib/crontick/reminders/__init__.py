"""Booking reminders, due in a window before each booking and sent once, and the delivery channels they share."""
