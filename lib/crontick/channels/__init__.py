"""Delivery channels (console, email, SMS, WhatsApp, Standard Webhooks), used by reminders, the built-in job types and alerts.

One module per provider; `registry.py` maps each channel name to the module that builds it.
"""
