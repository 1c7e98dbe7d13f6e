"""An app's handlers, to show crontick.testing: charge an order (a step), wait an hour, then enqueue its receipt."""

from __future__ import annotations

import os
from typing import Any

import psycopg

import crontick


class Payments:
    """A stand-in for a payment provider: what it charged, and how many calls it fails first (a test sets it)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.charged: list[int] = []
        self.receipts: list[int] = []
        self.failures_left = 0

    def charge(self, order_id: int, cents: int, idempotency_key: str) -> dict[str, Any]:
        if self.failures_left > 0:
            self.failures_left -= 1
            raise ConnectionError("the payment provider is down")
        self.charged.append(order_id)
        return {"order_id": order_id, "cents": cents, "key": idempotency_key}


payments = Payments()


@crontick.handler("charge_order")
def charge_order(payload: dict[str, Any], job: crontick.Job) -> None:
    order_id = payload["order_id"]
    job.step("charge", payments.charge, order_id, payload["cents"], job.step_key("charge"))  # raises: retried
    job.sleep("cool-off", 3600)  # an hour before the receipt, spending no attempt
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        crontick.enqueue(conn, "send_receipt", {"order_id": order_id}, key=f"receipt:{order_id}")


@crontick.handler("send_receipt")
def send_receipt(payload: dict[str, Any], job: crontick.Job) -> None:
    payments.receipts.append(payload["order_id"])
