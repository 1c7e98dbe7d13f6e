-- 0029: the audit log records the person as well as the role. `actor` is the name an
-- authorize() hook gave (null for the secret login, the bearer API and the CLI, which know only
-- a role), capped like the hook's answer (crontick.admin.session.ACTOR_MAX_CHARS). Sign-in and
-- sign-out are audited too; a failed sign-in identified nobody, so `role` may now be null.
alter table {schema}.admin_audit add column actor text;
alter table {schema}.admin_audit add constraint admin_audit_actor_capped check (length(actor) <= 200);
alter table {schema}.admin_audit alter column role drop not null;
