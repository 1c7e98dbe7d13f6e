"""The salon's own tables: services, customers, appointments."""

from django.db import models


class Service(models.Model):  # type: ignore[misc]
    name = models.CharField(max_length=100)


class Customer(models.Model):  # type: ignore[misc]
    name = models.CharField(max_length=100)
    email = models.EmailField()
    phone = models.CharField(max_length=30, blank=True)


class Appointment(models.Model):  # type: ignore[misc]
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)
    service = models.ForeignKey(Service, on_delete=models.PROTECT)
    starts_at = models.DateTimeField()
    cancelled = models.BooleanField(default=False)
