"""The project's own tests: `manage.py test` creates its test database through migrate, crontick's schema included."""

from django.db import connection
from django.test import TestCase


class SignupTests(TestCase):
    def test_a_signup_enqueues_its_welcome_email_and_kicks_on_commit(self) -> None:
        with self.captureOnCommitCallbacks() as callbacks:  # TestCase never commits: the kick is only registered
            response = self.client.post("/signup", {"email": "test@example.com"})
        self.assertEqual(response.status_code, 200)
        with connection.cursor() as cursor:
            cursor.execute("select type, status from crontick.jobs where id = %s", [response.json()["job_id"]])
            self.assertEqual(cursor.fetchone(), ("send_welcome_email", "pending"))
        self.assertEqual(len(callbacks), 1)
