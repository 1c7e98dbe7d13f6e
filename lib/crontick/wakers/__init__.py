"""Precise wake-ups (issue 35): the tick books this app's next tick at the instant work comes due.

`book_next` (crontick.wakers.booking) is what a tick calls; the provider modules (qstash,
eventbridge, cloudtasks, vercel_queue) are imported only when CRONTICK_WAKER names one, through
crontick.wakers.registry. None of them imports boto3 or a Google library: every call is one httpx
request, EventBridge's signed by hand (crontick.wakers.sigv4).
"""
