"""The reminder source: a view over the salon's three tables, with the service's name and a reschedule link."""

from django.db import migrations

VIEW = """
create view public.salon_reminders as
select a.id, c.name as customer_name, c.email, c.phone, a.starts_at, 'Europe/Paris' as time_zone,
       case when a.cancelled then 'cancelled' else 'confirmed' end as status,
       s.name as service, 'https://salon.example/reschedule/' || a.id as reschedule_url
from salon_appointment a join salon_customer c on c.id = a.customer_id join salon_service s on s.id = a.service_id
"""


class Migration(migrations.Migration):  # type: ignore[misc]
    dependencies = [("salon", "0001_initial")]
    operations = [migrations.RunSQL(VIEW, "drop view public.salon_reminders")]
