-- 0011: sign-out ends every copy of an admin session's cookie. The cookie stays signed and
-- self-contained, so signing in writes nothing; signing out records the cookie's session id
-- here until the cookie would have expired, and the admin refuses a cookie whose id is here
-- (crontick.admin.signouts). Each sign-out removes the records of cookies long expired, so
-- the table holds about the sign-outs of the last 8 hours.
create table {schema}.crontick_admin_signouts (
    session    text        primary key,
    expires_at timestamptz not null,
    constraint crontick_admin_signouts_session_short check (length(session) <= 64)
);
