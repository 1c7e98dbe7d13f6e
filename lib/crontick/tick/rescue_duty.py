"""The rescue duty: jobs whose lease expired (their tick died) are retried or failed, and the retried join this tick's batch."""

from __future__ import annotations

from crontick.tick.claim import RescueCounts, rescue_expired
from crontick.tick.duty import Duty, Tick


class RescueDuty(Duty):
    name = "rescue"  # asks nothing: the claim (the probe's, or job_claim_due) reports expired leases

    async def run(self, tick: Tick) -> RescueCounts:
        """The leases expired by the tick's `now`."""
        if not tick.part(self.name).get("due") or tick.out_of_time:
            return RescueCounts(0, 0)
        return await rescue_expired(tick.conn, tick.time)

    def made_due(self, counts: RescueCounts) -> bool:
        return counts.retried > 0


DUTY = RescueDuty()
