-- 0012: row-level security on every table of crontick's, with no policy.
--
-- Nothing changes for crontick: it connects as the role that ran `crontick migrate`, the tables'
-- owner, and an owner is not subject to its tables' row-level security (it is not FORCEd). Any
-- other role sees and changes no row, even if it is granted the table: on Supabase, a schema
-- listed among the Data API's exposed schemas still serves nothing to the anon or authenticated
-- keys. A least-privilege runtime role that is not the owner needs a policy of its own (the
-- Security page shows one) or BYPASSRLS.
alter table {schema}.jobs enable row level security;
alter table {schema}.job_attempts enable row level security;
alter table {schema}.crontick_ticks enable row level security;
alter table {schema}.bookings enable row level security;
alter table {schema}.reminder_sends enable row level security;
alter table {schema}.crontick_token_uses enable row level security;
alter table {schema}.crontick_schedules enable row level security;
alter table {schema}.crontick_schedule_declared enable row level security;
alter table {schema}.crontick_schedule_slots enable row level security;
alter table {schema}.crontick_alerts enable row level security;
alter table {schema}.admin_audit enable row level security;
alter table {schema}.crontick_inbound_events enable row level security;
alter table {schema}.crontick_migrations enable row level security;
alter table {schema}.crontick_admin_signouts enable row level security;
