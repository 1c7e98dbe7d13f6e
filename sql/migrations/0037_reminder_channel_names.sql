-- 0037: a reminder may go out over the smtp and django channels, or over a channel the app registers
-- with @crontick.reminder_channel (issue 38), whose names crontick cannot list. The constraint now
-- checks the name's form, as crontick.settings.variables.CHANNEL_NAME does: a previous release
-- writes only built-in names, which all fit.
alter table {schema}.reminder_sends drop constraint reminder_sends_channel_valid,
    add constraint reminder_sends_channel_valid check (channel ~ '^[a-z][a-z0-9_-]*$' and length(channel) <= 40);
