"""A signup; its welcome email is a crontick job, and the job records when it was sent."""

from django.db import models


class Signup(models.Model):
    email = models.EmailField(unique=True)
    plan = models.CharField(max_length=20)
    created_at = models.DateTimeField(auto_now_add=True)
    welcomed_at = models.DateTimeField(null=True)
